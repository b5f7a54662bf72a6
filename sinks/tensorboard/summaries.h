// The Event records the tensorboard sink writes, serialized (proto/*.proto,
// TensorFlow's field numbers): the file's first record, a step's scalars,
// a text summary, and the SessionLog START of a resume. Each returns the
// Event's bytes, to be framed by tfrecord().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sexpgpu::sinks::tensorboard {

// What TensorBoard's readers expect as the first record's file_version.
inline constexpr std::string_view kFileVersion = "brain.Event:2";

std::string file_version_event(double wall_time);

// One Event holding a Summary.Value per (tag, value), each a simple_value
// (a 32-bit float: what TensorBoard's scalars plugin reads).
std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, double>>& scalars);

// A text summary as TensorBoard's text plugin writes it: metadata
// plugin_name "text" (data class tensor) and a scalar DT_STRING tensor
// holding `markdown`.
std::string text_event(double wall_time, int64_t step, std::string_view tag,
                       std::string_view markdown);

// SessionLog START at `step`: TensorBoard forgets the values of this run
// at `step` and later that it read before (those a resumed run repeats).
std::string session_start_event(double wall_time, int64_t step);

}  // namespace sexpgpu::sinks::tensorboard
