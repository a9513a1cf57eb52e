// Temp directories and small file helpers for the executor tests.
#ifndef HPCB_TESTS_EXECUTOR_TEST_UTIL_H_
#define HPCB_TESTS_EXECUTOR_TEST_UTIL_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hpcb::executor::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/hpcb-exec-XXXXXX";
    char* made = ::mkdtemp(pattern.data());
    path_ = made ? made : "/tmp";
    ::chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace hpcb::executor::testing

#endif  // HPCB_TESTS_EXECUTOR_TEST_UTIL_H_
