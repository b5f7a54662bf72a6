// The process's S3 client and the data library's fetcher (s3_access.h).
#include "cli/s3_access.h"

#include <mutex>

#include "cli/settings.h"
#include "data/lookup.h"

namespace sexpgpu::cli {

namespace {

std::mutex g_mutex;
std::vector<S3Access> g_accesses;

// The environment's options with the settings' endpoint, region and
// profile, which put the config file's [s3] under the variables.
Result<s3::ClientOptions> client_options() {
  s3::Env env = s3::process_env();
  Result<s3::ClientOptions> o = s3::options_from_environment(env);
  if (!o) return o;
  s3::ClientOptions options = *o;
  std::string error;
  if (const config::Settings* s = load_settings("", error)) {
    if (config::Setting e = s->s3_endpoint(); e.value && e.source == config::Source::ConfigFile)
      options.endpoint = *e.value;
    if (config::Setting r = s->s3_region(); r.value && r.source == config::Source::ConfigFile)
      options.region = *r.value;
    if (config::Setting p = s->s3_profile(); p.value && p.source == config::Source::ConfigFile)
      options.profile = {*p.value, "config file " + p.origin};
  }
  return options;
}

}  // namespace

Result<s3::Client*> s3_client() {
  static const Result<std::unique_ptr<s3::Client>> client =
      []() -> Result<std::unique_ptr<s3::Client>> {
    Result<s3::ClientOptions> options = client_options();
    if (!options) return options.failed();
    return s3::Client::create(*options, s3::process_env());
  }();
  if (!client) return client.failed();
  return client->get();
}

std::vector<S3Access> s3_accesses() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_accesses;
}

void install_s3_data() {
  data::install_remote_fetch([](std::string_view address) -> Result<std::filesystem::path> {
    Result<std::filesystem::path> local = [&]() -> Result<std::filesystem::path> {
      Result<s3::Url> url = s3::parse_url(address);
      if (!url) return url.failed();
      Result<s3::Client*> client = s3_client();
      if (!client) return client.failed();
      return (*client)->fetch(*url);
    }();
    std::lock_guard<std::mutex> lock(g_mutex);
    g_accesses.push_back({std::string(address), local});
    return local;
  });
}

}  // namespace sexpgpu::cli
