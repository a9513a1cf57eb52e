#include "client/backend_config.h"

#include <gtest/gtest.h>

#include <map>

namespace hpcb::client {
namespace {

struct Fixture {
  std::map<std::string, std::string> env;
  std::map<std::string, Result<std::string>> files;

  Result<BackendConfig> Resolve() const {
    return ResolveBackendConfig(
        [this](const char* name) -> std::optional<std::string> {
          auto it = env.find(name);
          if (it == env.end()) return std::nullopt;
          return it->second;
        },
        [this](const std::string& path) -> Result<std::string> {
          auto it = files.find(path);
          if (it == files.end()) return Error(ErrorCode::kNotFound, path + ": missing");
          return it->second;
        });
  }
};

TEST(BackendConfigTest, DefaultsToTheLocalDaemonWithoutFileOrEnvironment) {
  auto config = Fixture{}.Resolve();
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->backend, BackendKind::kLocal);
  EXPECT_EQ(config->slurm_bin, "");
  EXPECT_EQ(config->slurm_timeout, std::chrono::seconds(30));
}

TEST(BackendConfigTest, ReadsTheDefaultFile) {
  Fixture f;
  f.files.emplace(kDefaultClientConfig,
                  "# site settings\n"
                  "  backend = slurm   # moved in May\n"
                  "\n"
                  "slurm_bin=/opt/slurm/bin\r\n"
                  "slurm_timeout = 1m\n");
  auto config = f.Resolve();
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->backend, BackendKind::kSlurm);
  EXPECT_EQ(config->slurm_bin, "/opt/slurm/bin");
  EXPECT_EQ(config->slurm_timeout, std::chrono::seconds(60));
}

TEST(BackendConfigTest, EnvironmentOverridesTheFile) {
  Fixture f;
  f.files.emplace("/site/client.conf", "backend = slurm\nslurm_bin = /opt/slurm/bin\n");
  f.env = {{"HPC_BATCH_CLIENT_CONFIG", "/site/client.conf"},
           {"HPC_BATCH_BACKEND", "local"},
           {"HPC_BATCH_SLURM_BIN", "/usr/local/slurm/bin"}};
  auto config = f.Resolve();
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->backend, BackendKind::kLocal);
  EXPECT_EQ(config->slurm_bin, "/usr/local/slurm/bin");
}

TEST(BackendConfigTest, EnvironmentAloneSelectsSlurm) {
  Fixture f;
  f.env = {{"HPC_BATCH_BACKEND", "slurm"}};
  auto config = f.Resolve();
  ASSERT_TRUE(config);
  EXPECT_EQ(config->backend, BackendKind::kSlurm);
}

TEST(BackendConfigTest, ANamedFileThatIsMissingIsAnError) {
  Fixture f;
  f.env = {{"HPC_BATCH_CLIENT_CONFIG", "/nowhere/client.conf"}};
  auto config = f.Resolve();
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message().find("/nowhere/client.conf"), std::string::npos);
}

TEST(BackendConfigTest, AnUnreadableDefaultFileIsAnError) {
  Fixture f;
  f.files.emplace(kDefaultClientConfig,
                  Error(ErrorCode::kPermissionDenied, "cannot read it: Permission denied"));
  auto config = f.Resolve();
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code(), ErrorCode::kPermissionDenied);
}

TEST(BackendConfigTest, MistakesNameTheFileAndLine) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"backend = pbs\n", "/c.conf:1: unknown backend 'pbs'"},
      {"\n# x\nbackend slurm\n", "/c.conf:3: expected 'key = value'"},
      {"colour = blue\n", "/c.conf:1: unknown key 'colour'"},
      {"slurm_bin = bin\n", "/c.conf:1: slurm_bin must be an absolute directory"},
      {"slurm_timeout = 0\n", "/c.conf:1: slurm_timeout must be a positive duration"},
      {"slurm_timeout = soon\n", "/c.conf:1: slurm_timeout must be a positive duration"},
  };
  for (const Case& c : cases) {
    BackendConfig config;
    auto applied = ApplyClientConfig(c.text, "/c.conf", &config);
    ASSERT_FALSE(applied) << c.text;
    EXPECT_EQ(applied.error().message().rfind(c.expected, 0), 0u) << applied.error().message();
  }
}

TEST(BackendConfigTest, ABadBackendInTheEnvironmentIsRefused) {
  Fixture f;
  f.env = {{"HPC_BATCH_BACKEND", "Slurm"}};
  auto config = f.Resolve();
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message().find("HPC_BATCH_BACKEND"), std::string::npos);
}

}  // namespace
}  // namespace hpcb::client
