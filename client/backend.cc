#include "client/backend.h"

#include "client/local_backend.h"
#include "client/slurm/slurm_backend.h"
#include "client/transport.h"

namespace hpcb::client {

std::unique_ptr<Backend> MakeBackend(const BackendConfig& config) {
  if (config.backend == BackendKind::kSlurm) return std::make_unique<slurm::SlurmBackend>(config);
  return std::make_unique<LocalBackend>(SocketPath());
}

}  // namespace hpcb::client
