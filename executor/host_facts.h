// Facts the roles look up before they are confined: users, groups, GPUs.
#ifndef HPCB_EXECUTOR_HOST_FACTS_H_
#define HPCB_EXECUTOR_HOST_FACTS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "executor/job_env.h"
#include "protocol/base/result.h"
#include "protocol/launcher_messages.h"

namespace hpcb::executor {

// --admin-group: the named group, or (empty) the first existing candidate.
// The error lists the existing candidates.
Result<gid_t> ResolveAdminGroup(const std::string& name);

// passwd entry of `uid` plus its group list (getgrouplist).
struct UserRecord {
  protocol::UserIdentity who;
  PasswdFacts facts;
};
Result<UserRecord> LookUpUser(uid_t uid);

// Number of "GPU n:" lines of `nvidia_smi -L`; 0 when it cannot run.
// Forks and execs: call before confinement only.
int CountGpus(const std::string& nvidia_smi);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_HOST_FACTS_H_
