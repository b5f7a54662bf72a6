// The profile file (profile_report.h).
#include "profile_report.h"

#include <algorithm>
#include <fstream>

namespace sexpgpu::plan {

void write_profile_report(const std::string& prefix, const std::string& function,
                          nlohmann::json steps, int64_t runs, const std::string& device) {
  double measured_us = 0, roofline_us = 0;
  for (const nlohmann::json& s : steps) {
    measured_us += s.value("measured_us", 0.0);
    roofline_us += s.value("roofline_us", 0.0);
  }
  nlohmann::json report = {{"function", function},       {"runs", runs},
                           {"measured_us", measured_us}, {"roofline_us", roofline_us},
                           {"device", device},           {"steps", std::move(steps)}};
  std::string name = function;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return c == ':' || c == '@' || c == '/'; }, '_');
  std::ofstream(prefix + "." + name + ".json") << report.dump(1) << "\n";
}

}  // namespace sexpgpu::plan
