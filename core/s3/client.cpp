// The client's options and factory (client.h). The requests themselves are
// client_curl.cpp; without libcurl this file's stand-in refuses each call.
#include "s3/client.h"

#include <charconv>

#include "s3/cache.h"

namespace sexpgpu::s3 {

std::unique_ptr<Client> make_curl_client(const ClientOptions& options, Credentials credentials);

namespace {

// A SEXPGPU_S3_* variable as an integer in [min, max], or E-S3 naming it.
Status read_int(const Env& env, const char* name, int64_t min, int64_t max, const char* unit,
                int64_t& out) {
  std::optional<std::string> v = env(name);
  if (!v) return ok_status();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), value);
  if (ec != std::errc() || end != v->data() + v->size() || value < min || value > max) {
    Failed f = fail("E-S3", std::string(name) + " is \"" + *v + "\"; it takes " +
                                std::to_string(min) + " to " + std::to_string(max) + " " + unit);
    f.diagnostic.fix = "set " + std::string(name) + " to a whole number in that range, or unset it";
    return f;
  }
  out = value;
  return ok_status();
}

#ifndef SEXPGPU_HAVE_CURL
Failed no_curl() {
  Failed f = fail("E-S3", "this sexpgpu was built without libcurl, which s3:// needs");
  f.diagnostic.fix =
      "install libcurl4-openssl-dev and rebuild, or copy the object and name the local file";
  return f;
}

class NoCurlClient final : public Client {
 public:
  NoCurlClient(ClientOptions options, CredentialSource source)
      : options_(std::move(options)), source_(std::move(source)) {}
  Result<ObjectInfo> head(const Url&) override { return no_curl(); }
  Result<std::filesystem::path> fetch(const Url&) override { return no_curl(); }
  CredentialSource credentials() const override { return source_; }
  const ClientOptions& options() const override { return options_; }

 private:
  ClientOptions options_;
  CredentialSource source_;
};
#endif

}  // namespace

bool built_with_curl() {
#ifdef SEXPGPU_HAVE_CURL
  return true;
#else
  return false;
#endif
}

Result<ClientOptions> options_from_environment(const Env& env) {
  ClientOptions o;
  o.endpoint = env("AWS_ENDPOINT_URL_S3").value_or(env("AWS_ENDPOINT_URL").value_or(""));
  o.region = env("AWS_REGION").value_or(env("AWS_DEFAULT_REGION").value_or(""));
  if (auto p = env("AWS_PROFILE")) o.profile = {*p, "AWS_PROFILE"};
  o.cache_root = cache_root(env);
  int64_t retries = o.retries, timeout = o.timeout_s, part_mb = int64_t(o.part_bytes >> 20),
          parallel = o.parallel;
  for (Status s : {read_int(env, "SEXPGPU_S3_RETRIES", 0, 20, "retries", retries),
                   read_int(env, "SEXPGPU_S3_TIMEOUT", 1, 3600, "seconds", timeout),
                   read_int(env, "SEXPGPU_S3_PART_MB", 1, 5120, "MiB", part_mb),
                   read_int(env, "SEXPGPU_S3_PARALLEL", 1, 64, "parts at once", parallel)})
    if (!s) return s.failed();
  o.retries = int(retries);
  o.timeout_s = int(timeout);
  o.part_bytes = uint64_t(part_mb) << 20;
  o.parallel = int(parallel);
  return o;
}

Result<std::unique_ptr<Client>> Client::create(const ClientOptions& options, const Env& env) {
  Result<Credentials> credentials = resolve_credentials(env, options.profile);
  if (!credentials) return credentials.failed();
#ifdef SEXPGPU_HAVE_CURL
  return make_curl_client(options, *credentials);
#else
  return std::unique_ptr<Client>(std::make_unique<NoCurlClient>(options, credentials->source));
#endif
}

Result<std::unique_ptr<Client>> Client::from_environment() {
  Env env = process_env();
  Result<ClientOptions> options = options_from_environment(env);
  if (!options) return options.failed();
  return create(*options, env);
}

}  // namespace sexpgpu::s3
