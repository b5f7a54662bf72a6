// A C++ test plugin whose entry point lets an exception escape: the host's
// exception firewall must turn it into a reason, not a crash.
#include <sexpgpu/plugin.h>

#include <stdexcept>

extern "C" const sg_plugin* sexpgpu_plugin_entry_v1(const sg_host_api*) {
  throw std::runtime_error("no GPU driver found");
}
