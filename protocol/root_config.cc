#include "protocol/root_config.h"

#include <utility>

namespace hpcb::protocol {

Result<void> RootConfig::Validate() const {
  const std::pair<const char*, const std::string*> paths[] = {
      {"socket", &socket},           {"state_dir", &state_dir},          {"dev_dir", &dev_dir},
      {"sys_root", &sys_root},       {"cgroup_root", &cgroup_root},      {"proc_root", &proc_root},
      {"gpu_dev_dir", &gpu_dev_dir}, {"gpu_driver_dir", &gpu_driver_dir}};
  for (const auto& [name, path] : paths) {
    if (path->empty() || path->front() != '/') {
      return InvalidArgument(std::string("field '") + name + "' must be an absolute path");
    }
  }
  if (max_user_state_mib < 1) return InvalidArgument("field 'max_user_state_mib' must be >= 1");
  if (max_output_mib < 1) return InvalidArgument("field 'max_output_mib' must be >= 1");
  if (launcher_protocol != kLauncherProtocol) {
    return InvalidArgument("the launcher speaks protocol " + std::to_string(launcher_protocol) +
                           ", this executor " + std::to_string(kLauncherProtocol));
  }
  return Ok();
}

}  // namespace hpcb::protocol
