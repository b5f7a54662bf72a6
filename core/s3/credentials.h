// S3 credentials (cli.md, environment): AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), else the shared
// credentials file ($AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials)
// under the profile the caller resolved (AWS_PROFILE, else the config
// file's [s3] profile, else "default"), else none: unsigned requests, which
// only public buckets answer. The values are kept here and handed to
// libcurl; what the rest of the program sees is the CredentialSource,
// where they came from, never what they are.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace sexpgpu::s3 {

// The environment as a lookup: nullopt when a variable is unset or empty.
using Env = std::function<std::optional<std::string>(const std::string& name)>;
Env process_env();

// Where credentials came from, for doctor and logs: never the values.
struct CredentialSource {
  std::string kind;    // "environment", "file", "none"
  std::string detail;  // "AWS_ACCESS_KEY_ID", "~/.aws/credentials [default]"
};

struct Credentials {
  std::string access_key, secret_key, session_token;  // secrets: never print them
  CredentialSource source;
  bool anonymous() const { return access_key.empty(); }
};

// One profile of a shared credentials file.
struct ProfileKeys {
  std::string access_key, secret_key, session_token;
};

// The profiles of an AWS shared credentials file (INI: "[name]" sections,
// "key = value" lines, '#' and ';' comments); keys other than
// aws_access_key_id, aws_secret_access_key and aws_session_token are
// ignored. A malformed line is an error naming its line number, never its
// text (it may hold a secret).
Result<std::map<std::string, ProfileKeys>> parse_credentials_file(std::string_view text);

// The profile and where its name came from ("AWS_PROFILE", "config file
// PATH:LINE:COL", "default").
struct Profile {
  std::string name = "default";
  std::string origin = "default";
  bool named() const { return origin != "default"; }
};

// The credentials, as the file comment says. E-S3 when only one of the two
// key variables is set, when the file cannot be parsed, or when a profile
// the user named is not in it.
Result<Credentials> resolve_credentials(const Env& env, const Profile& profile);

}  // namespace sexpgpu::s3
