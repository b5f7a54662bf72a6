// S3 credentials (credentials.h).
#include "s3/credentials.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sexpgpu::s3 {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

Failed credential_error(const std::string& message, const std::string& fix) {
  Failed f = fail("E-S3", message);
  f.diagnostic.fix = fix;
  return f;
}

}  // namespace

Env process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

Result<std::map<std::string, ProfileKeys>> parse_credentials_file(std::string_view text) {
  std::map<std::string, ProfileKeys> profiles;
  ProfileKeys* current = nullptr;
  int line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        return Result<std::map<std::string, ProfileKeys>>::failure(
            "line " + std::to_string(line_no) + ": a section header without its ']'");
      std::string name(trim(line.substr(1, line.size() - 2)));
      // ~/.aws/config writes "[profile NAME]"; accept it here too.
      if (name.starts_with("profile ")) name = std::string(trim(std::string_view(name).substr(8)));
      current = &profiles[name];
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return Result<std::map<std::string, ProfileKeys>>::failure(
          "line " + std::to_string(line_no) + ": neither [profile] nor key = value");
    if (!current) continue;  // keys before any section belong to no profile
    std::string_view key = trim(line.substr(0, eq));
    std::string value(trim(line.substr(eq + 1)));
    if (key == "aws_access_key_id")
      current->access_key = value;
    else if (key == "aws_secret_access_key")
      current->secret_key = value;
    else if (key == "aws_session_token")
      current->session_token = value;
  }
  return profiles;
}

Result<Credentials> resolve_credentials(const Env& env, const Profile& profile) {
  Credentials c;
  std::optional<std::string> id = env("AWS_ACCESS_KEY_ID");
  std::optional<std::string> secret = env("AWS_SECRET_ACCESS_KEY");
  if (id && secret) {
    c.access_key = *id;
    c.secret_key = *secret;
    c.session_token = env("AWS_SESSION_TOKEN").value_or("");
    c.source = {"environment", c.session_token.empty() ? "AWS_ACCESS_KEY_ID"
                                                       : "AWS_ACCESS_KEY_ID, AWS_SESSION_TOKEN"};
    return c;
  }
  if (id || secret)
    return credential_error(std::string(id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY") +
                                " is set and " +
                                (id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID") + " is not",
                            "set both, or neither to use ~/.aws/credentials");

  // The file: AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials.
  std::string shown = "~/.aws/credentials";
  std::string path;
  if (std::optional<std::string> f = env("AWS_SHARED_CREDENTIALS_FILE")) {
    path = shown = *f;
  } else if (std::optional<std::string> home = env("HOME")) {
    path = *home + "/.aws/credentials";
  }
  std::ifstream in(path, std::ios::binary);
  if (!path.empty() && in) {
    std::stringstream text;
    text << in.rdbuf();
    auto profiles = parse_credentials_file(text.str());
    if (!profiles)
      return credential_error(shown + ": " + profiles.error(),
                              "fix the file (aws configure writes it)");
    auto it = profiles->find(profile.name);
    if (it != profiles->end() && !it->second.access_key.empty()) {
      if (it->second.secret_key.empty())
        return credential_error(
            shown + " [" + profile.name + "] has aws_access_key_id and no aws_secret_access_key",
            "add the secret key to that profile");
      c.access_key = it->second.access_key;
      c.secret_key = it->second.secret_key;
      c.session_token = it->second.session_token;
      c.source = {"file", shown + " [" + profile.name + "]"};
      return c;
    }
  }
  if (profile.named())
    return credential_error(
        "the profile \"" + profile.name + "\" (" + profile.origin + ") is not in " + shown,
        "add it to " + shown + ", or name a profile the file has");
  c.source = {"none", "no AWS_ACCESS_KEY_ID and no [" + profile.name + "] in " + shown +
                          ": unsigned requests (public buckets only)"};
  return c;
}

}  // namespace sexpgpu::s3
