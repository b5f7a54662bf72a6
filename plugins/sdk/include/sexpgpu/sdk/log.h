// sexpgpu/sdk/log.h: a plugin's log lines, through the host's `log`
// callback (sg_host_api), into the core's log on standard error at the
// level the user chose (--log, SEXPGPU_LOG). A plugin never writes to
// standard output, and never links the core's logger.
//
// The entry point (serve, SEXPGPU_SDK_ENTRY) remembers the host's table;
// before that, or for a core without a log, a line goes nowhere:
//   sexpgpu::sdk::log(SG_LOG_DEBUG, "nvrtc: 12 kernels in 85.0 ms");
#pragma once

#include <cstring>
#include <string>
#include <string_view>

#include "sexpgpu/plugin.h"

namespace sexpgpu::sdk {

// The host table the entry point was last given (plugin.h: it lives until
// the plugin is unloaded); null before.
inline const sg_host_api*& served_host() noexcept {
  static const sg_host_api* host = nullptr;
  return host;
}

// One line at `level`; never throws (a log line must not fail a call).
inline void log(sg_log_level level, std::string_view message) noexcept {
  const sg_host_api* host = served_host();
  if (host && host->log) host->log(host->host_data, level, message.data(), message.size());
}

}  // namespace sexpgpu::sdk
