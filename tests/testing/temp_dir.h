// TempDir and small file helpers shared by every test binary: a scratch
// directory under /tmp, removed with everything in it when the test ends.
#ifndef HPCB_TESTS_TESTING_TEMP_DIR_H_
#define HPCB_TESTS_TESTING_TEMP_DIR_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hpcb::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/hpcb-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
    // Readable by the unprivileged users some root-mode tests run as.
    ::chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `text` to `path`, creating its parent directories.
inline void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// The whole file; "" when it cannot be read.
inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace hpcb::testing

#endif  // HPCB_TESTS_TESTING_TEMP_DIR_H_
