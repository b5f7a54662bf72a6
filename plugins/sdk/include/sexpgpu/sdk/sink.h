// sexpgpu/sdk/sink.h: a sink plugin from one C++ class (plugins/sdk/README.md).
// SinkPlugin<S> is the whole sg_sink_api: each call checks its handle, runs
// behind the firewall (errors.h) and calls S, so S holds only what its sink
// does. S provides:
//
//   static constexpr const char* kName = "jsonl";      // the plugin's name
//   static constexpr const char* kVersion = "1.0.0";
//   explicit S(const sdk::SinkOpen& open);  // `open`: may throw
//   void event(std::string_view line);      // one event, without its newline
//   void flush();
//   void close();                           // flush and make durable
//
// The sink is freed after `close`, even when close throws.
#pragma once

#include <memory>
#include <string_view>

#include "sexpgpu/sdk/errors.h"
#include "sexpgpu/sdk/tables.h"

namespace sexpgpu::sdk {

// The arguments of sg_sink_api's `open`, borrowed for the constructor only.
struct SinkOpen {
  std::string_view run_dir;     // "" when there is no run directory
  std::string_view open_event;  // the run's `open` event, one JSON line
  std::string_view arg;         // ARG of --sink NAME:ARG; "" when absent
};

template <class S>
struct SinkPlugin {
  static S& checked(sg_sink* sink) {
    if (!sink) fail(SG_ERROR_INVALID_ARGUMENT, "called with a NULL sink");
    return *reinterpret_cast<S*>(sink);
  }

  static sg_error* open(const char* run_dir, size_t run_dir_len, const char* open_event,
                        size_t open_event_len, const char* arg, size_t arg_len,
                        sg_sink** out_sink) {
    return firewall(S::kName, [&] {
      if (!out_sink) fail(SG_ERROR_INVALID_ARGUMENT, "open without out_sink");
      *out_sink = nullptr;
      auto sink = std::make_unique<S>(SinkOpen{{run_dir, run_dir ? run_dir_len : 0},
                                               {open_event, open_event ? open_event_len : 0},
                                               {arg, arg ? arg_len : 0}});
      *out_sink = reinterpret_cast<sg_sink*>(sink.release());
    });
  }

  static sg_error* event(sg_sink* sink, const char* line, size_t len) {
    return firewall(S::kName, [&] { checked(sink).event({line, line ? len : 0}); });
  }

  static sg_error* flush(sg_sink* sink) {
    return firewall(S::kName, [&] { checked(sink).flush(); });
  }

  static sg_error* close(sg_sink* sink) {
    return firewall(S::kName, [&] {
      std::unique_ptr<S> owned(&checked(sink));  // freed even when close throws
      owned->close();
    });
  }

  static constexpr sg_sink_api kApi = sink_table(open, event, flush, close);
  static constexpr sg_plugin kPlugin = describe(SG_PLUGIN_SINK, S::kName, S::kVersion, &kApi);
};

}  // namespace sexpgpu::sdk
