// core/s3 without a server: s3:// address parsing, object URLs, the shared
// credentials file and the order credentials are taken in, the cache's
// keys and layout, the tuning variables' ranges, and E-S3's messages and
// fixes. The requests themselves are tests/e2e/s3.sh's, against moto.
#include <map>

#include "catch.hpp"
#include "s3/cache.h"
#include "s3/client.h"
#include "s3/credentials.h"
#include "s3/error.h"
#include "s3/url.h"
#include "test_temp_files.h"

namespace {

using namespace sexpgpu::s3;
namespace fs = std::filesystem;

Env fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("s3: parse_url takes s3://bucket/key and refuses malformed ones", "[s3]") {
  auto u = parse_url("s3://my-data/fashion-mnist/train.gz");
  REQUIRE(u);
  CHECK(u->bucket == "my-data");
  CHECK(u->key == "fashion-mnist/train.gz");
  CHECK(u->text() == "s3://my-data/fashion-mnist/train.gz");
  CHECK(parse_url("s3://a.b-c/k")->bucket == "a.b-c");
  CHECK(parse_url("s3://bkt/dir/")->key == "dir/");
  for (const char* bad :
       {"http://bucket/key", "s3://", "s3:///key", "s3://bucket", "s3://bucket/", "s3://ab/key",
        "s3://Upper/key", "s3://-bucket/key", "s3://bucket-/k", "s3://under_score/k"}) {
    auto r = parse_url(bad);
    INFO(bad);
    REQUIRE_FALSE(r);
    CHECK(r.code() == "E-S3");
    CHECK(r.error().find(bad) != std::string::npos);
    CHECK(!r.diagnostic().fix.empty());
  }
  CHECK(parse_url("s3://bucket/" + std::string(1024, 'k')));
  CHECK_FALSE(parse_url("s3://bucket/" + std::string(1025, 'k')));
  CHECK(parse_url("s3://" + std::string(63, 'b') + "/k"));
  CHECK_FALSE(parse_url("s3://" + std::string(64, 'b') + "/k"));
}

TEST_CASE("s3: object URLs are virtual-hosted on AWS and path-style elsewhere", "[s3]") {
  Url u{"bucket", "dir/a b+c.gz"};
  CHECK(encode_key("dir/a b+c.gz") == "dir/a%20b%2Bc.gz");
  CHECK(encode_key("x~y_z-1.2") == "x~y_z-1.2");
  CHECK(object_url("", "eu-west-1", u) ==
        "https://bucket.s3.eu-west-1.amazonaws.com/dir/a%20b%2Bc.gz");
  CHECK(object_url("", "", u) == "https://bucket.s3.us-east-1.amazonaws.com/dir/a%20b%2Bc.gz");
  CHECK(object_url("", "us-east-1", Url{"a.b.c", "k"}) ==
        "https://s3.us-east-1.amazonaws.com/a.b.c/k");
  CHECK(object_url("http://127.0.0.1:9000", "", u) ==
        "http://127.0.0.1:9000/bucket/dir/a%20b%2Bc.gz");
  CHECK(object_url("http://127.0.0.1:9000/", "", u) ==
        "http://127.0.0.1:9000/bucket/dir/a%20b%2Bc.gz");
  CHECK(object_url("127.0.0.1:9000", "", Url{"b", "k"}) == "http://127.0.0.1:9000/b/k");
  CHECK(object_url("https://minio.lab", "", Url{"b", "k"}) == "https://minio.lab/b/k");
}

TEST_CASE("s3: the shared credentials file's profiles", "[s3]") {
  auto p = parse_credentials_file(
      "# comment\n"
      "[default]\n"
      "aws_access_key_id = AKIDDEFAULT\n"
      "aws_secret_access_key=secretdefault\r\n"
      "; another comment\n"
      "\n"
      "[profile lab]\n"
      "  aws_access_key_id = AKIDLAB  \n"
      "aws_secret_access_key = secret/lab=\n"
      "aws_session_token = token\n"
      "region = eu-west-1\n");
  REQUIRE(p);
  REQUIRE(p->size() == 2);
  CHECK(p->at("default").access_key == "AKIDDEFAULT");
  CHECK(p->at("default").secret_key == "secretdefault");
  CHECK(p->at("default").session_token.empty());
  CHECK(p->at("lab").access_key == "AKIDLAB");
  CHECK(p->at("lab").secret_key == "secret/lab=");  // '=' inside a value is kept
  CHECK(p->at("lab").session_token == "token");

  auto bad = parse_credentials_file("[default]\naws_secret_access_key SECRETVALUE\n");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().find("line 2") != std::string::npos);
  CHECK(bad.error().find("SECRETVALUE") == std::string::npos);  // never the text
  CHECK_FALSE(parse_credentials_file("[default\n"));
}

TEST_CASE("s3: credentials come from the environment, then the file, then none", "[s3]") {
  test_files::TempDir dir("s3");
  fs::create_directories(dir.path() / ".aws");
  test_files::write_file(dir.path() / ".aws/credentials",
                         "[default]\naws_access_key_id=FILEID\naws_secret_access_key=FILESECRET\n"
                         "[lab]\naws_access_key_id=LABID\naws_secret_access_key=LABSECRET\n"
                         "[half]\naws_access_key_id=HALFID\n");
  const std::string home = dir.path().string();

  auto env = resolve_credentials(
      fake_env(
          {{"HOME", home}, {"AWS_ACCESS_KEY_ID", "ENVID"}, {"AWS_SECRET_ACCESS_KEY", "ENVSECRET"}}),
      {});
  REQUIRE(env);
  CHECK(env->access_key == "ENVID");
  CHECK(env->source.kind == "environment");
  CHECK(env->source.detail == "AWS_ACCESS_KEY_ID");
  auto token = resolve_credentials(
      fake_env(
          {{"AWS_ACCESS_KEY_ID", "I"}, {"AWS_SECRET_ACCESS_KEY", "S"}, {"AWS_SESSION_TOKEN", "T"}}),
      {});
  REQUIRE(token);
  CHECK(token->session_token == "T");
  CHECK(token->source.detail == "AWS_ACCESS_KEY_ID, AWS_SESSION_TOKEN");

  auto half = resolve_credentials(fake_env({{"AWS_ACCESS_KEY_ID", "ENVID"}}), {});
  REQUIRE_FALSE(half);
  CHECK(half.code() == "E-S3");
  CHECK(half.error().find("AWS_SECRET_ACCESS_KEY") != std::string::npos);

  auto file = resolve_credentials(fake_env({{"HOME", home}}), {});
  REQUIRE(file);
  CHECK(file->access_key == "FILEID");
  CHECK(file->secret_key == "FILESECRET");
  CHECK(file->source.kind == "file");
  CHECK(file->source.detail == "~/.aws/credentials [default]");

  auto lab = resolve_credentials(fake_env({{"HOME", home}}), {"lab", "AWS_PROFILE"});
  REQUIRE(lab);
  CHECK(lab->access_key == "LABID");
  CHECK(lab->source.detail == "~/.aws/credentials [lab]");

  auto missing =
      resolve_credentials(fake_env({{"HOME", home}}), {"nope", "config file c.toml:3:11"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().find("\"nope\" (config file c.toml:3:11)") != std::string::npos);
  auto no_secret = resolve_credentials(fake_env({{"HOME", home}}), {"half", "AWS_PROFILE"});
  REQUIRE_FALSE(no_secret);
  CHECK(no_secret.error().find("no aws_secret_access_key") != std::string::npos);

  auto other = resolve_credentials(
      fake_env(
          {{"HOME", home}, {"AWS_SHARED_CREDENTIALS_FILE", (dir.path() / "elsewhere").string()}}),
      {});
  REQUIRE(other);  // the default profile missing from a file is no error: unsigned requests
  CHECK(other->anonymous());
  CHECK(other->source.kind == "none");
  auto none = resolve_credentials(fake_env({}), {});
  REQUIRE(none);
  CHECK(none->anonymous());
}

TEST_CASE("s3: the cache root and its entries keyed by bucket, key and ETag", "[s3]") {
  CHECK(cache_root(fake_env({{"SEXPGPU_CACHE", "/c"}, {"SEXPGPU_CACHE_DIR", "/old"}})) == "/c");
  CHECK(cache_root(fake_env({{"SEXPGPU_CACHE_DIR", "/old"}, {"HOME", "/h"}})) == "/old");
  CHECK(cache_root(fake_env({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}})) == "/x/sexpgpu");
  CHECK(cache_root(fake_env({{"HOME", "/h"}})) == "/h/.cache/sexpgpu");
  CHECK(cache_root(fake_env({})).empty());

  CHECK(etag_dir("\"0d30e22e447f3c33dab9ed536400ac01\"") == "0d30e22e447f3c33dab9ed536400ac01");
  CHECK(etag_dir("\"abc-3\"") == "abc-3");
  CHECK(etag_dir("W/\"x y\"") == "W_x_y");
  CHECK(etag_dir("") == "none");
  CHECK(encode_part("") == "%");
  CHECK(encode_part(".") == "%2E");
  CHECK(encode_part("..") == "%2E%2E");
  CHECK(encode_part("a.b") == "a.b");
  CHECK(encode_part("@x y") == "%40x%20y");

  fs::path root = "/c";
  CHECK(cache_entry(root, {"bkt", "fm/train.gz"}, "\"e1\"") == "/c/s3/bkt/fm/@e1/train.gz");
  CHECK(cache_entry(root, {"bkt", "train.gz"}, "\"e1\"") == "/c/s3/bkt/@e1/train.gz");
  CHECK(cache_entry(root, {"bkt", "a/../b"}, "e") == "/c/s3/bkt/a/%2E%2E/@e/b");
  CHECK(cache_entry(root, {"bkt", "a//b/"}, "e") == "/c/s3/bkt/a/%/b/@e/%");
  // Another ETag is another entry; another bucket or key another place.
  CHECK(cache_entry(root, {"bkt", "k"}, "e1") != cache_entry(root, {"bkt", "k"}, "e2"));
  CHECK(cache_entry(root, {"bkt", "k"}, "e") != cache_entry(root, {"bk2", "k"}, "e"));
  CHECK(cache_entry(root, {"bkt", "a/@e/k"}, "e") != cache_entry(root, {"bkt", "a/k"}, "e"));
}

TEST_CASE("s3: newest_entry finds a complete entry, never a partial one", "[s3]") {
  test_files::TempDir dir("s3");
  Url url{"bkt", "fm/x.gz"};
  CHECK_FALSE(newest_entry(dir.path(), url));
  fs::path old_entry = cache_entry(dir.path(), url, "old");
  fs::create_directories(old_entry.parent_path());
  test_files::write_file(old_entry.parent_path() / ".partial-1-0-x.gz", "half");
  CHECK_FALSE(newest_entry(dir.path(), url));
  test_files::write_file(old_entry, "old bytes");
  fs::path new_entry = cache_entry(dir.path(), url, "new");
  fs::create_directories(new_entry.parent_path());
  test_files::write_file(new_entry, "new bytes");
  fs::last_write_time(old_entry, fs::last_write_time(new_entry) - std::chrono::hours(1));
  REQUIRE(newest_entry(dir.path(), url));
  CHECK(*newest_entry(dir.path(), url) == new_entry);
}

TEST_CASE("s3: the tuning variables are range-checked", "[s3]") {
  auto o = options_from_environment(fake_env({{"AWS_ENDPOINT_URL", "http://127.0.0.1:1"},
                                              {"AWS_REGION", "eu-west-1"},
                                              {"AWS_PROFILE", "lab"},
                                              {"SEXPGPU_CACHE", "/c"},
                                              {"SEXPGPU_S3_RETRIES", "0"},
                                              {"SEXPGPU_S3_TIMEOUT", "3600"},
                                              {"SEXPGPU_S3_PART_MB", "1"},
                                              {"SEXPGPU_S3_PARALLEL", "64"}}));
  REQUIRE(o);
  CHECK(o->endpoint == "http://127.0.0.1:1");
  CHECK(o->region == "eu-west-1");
  CHECK(o->profile.name == "lab");
  CHECK(o->profile.origin == "AWS_PROFILE");
  CHECK(o->cache_root == "/c");
  CHECK(o->retries == 0);
  CHECK(o->timeout_s == 3600);
  CHECK(o->part_bytes == 1u << 20);
  CHECK(o->parallel == 64);
  auto defaults = options_from_environment(fake_env({}));
  REQUIRE(defaults);
  CHECK(defaults->profile.name == "default");
  CHECK_FALSE(defaults->profile.named());
  CHECK(defaults->retries == 4);
  for (auto [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"SEXPGPU_S3_RETRIES", "21"},
                                                        {"SEXPGPU_S3_RETRIES", "-1"},
                                                        {"SEXPGPU_S3_TIMEOUT", "0"},
                                                        {"SEXPGPU_S3_PART_MB", "5121"},
                                                        {"SEXPGPU_S3_PARALLEL", "x"},
                                                        {"SEXPGPU_S3_PARALLEL", "4 "}}) {
    auto r = options_from_environment(fake_env({{name, value}}));
    INFO(name << "=" << value);
    REQUIRE_FALSE(r);
    CHECK(r.code() == "E-S3");
    CHECK(r.error().find(name) != std::string::npos);
  }
}

TEST_CASE("s3: E-S3 names the bucket, key, status and S3 code, with a fix", "[s3]") {
  Url url{"bkt", "fm/x.gz"};
  Answer a;
  a.status = 404;
  parse_error_body(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The specified key "
      "does not exist.</Message><Key>fm/x.gz</Key></Error>",
      a);
  CHECK(a.code == "NoSuchKey");
  auto f =
      request_failure(url, "HEAD", a, 1, "http://127.0.0.1:9", "environment: AWS_ACCESS_KEY_ID");
  CHECK(f.diagnostic.code == "E-S3");
  CHECK(f.diagnostic.message ==
        "s3://bkt/fm/x.gz: HEAD: HTTP 404 NoSuchKey: The specified key does not exist.");
  CHECK(f.diagnostic.fix.find("no object fm/x.gz in bucket bkt") != std::string::npos);

  Answer bucket{404, "", "NoSuchBucket", "The specified bucket does not exist", ""};
  CHECK(request_failure(url, "HEAD", bucket, 1, "http://e", "")
            .diagnostic.fix.find("no bucket bkt at http://e") != std::string::npos);
  Answer denied{403, "", "InvalidAccessKeyId", "", ""};
  CHECK(request_failure(url, "HEAD", denied, 1, "", "file: ~/.aws/credentials [lab]")
            .diagnostic.fix.find("check the credentials (file: ~/.aws/credentials [lab]") !=
        std::string::npos);
  Answer moved{301, "", "PermanentRedirect", "", "eu-west-1"};
  CHECK(request_failure(url, "HEAD", moved, 1, "", "").diagnostic.fix.find("(eu-west-1)") !=
        std::string::npos);
  Answer offline{0, "Failed to connect to 127.0.0.1 port 9", "", "", ""};
  auto o = request_failure(url, "HEAD", offline, 3, "http://127.0.0.1:9", "");
  CHECK(o.diagnostic.message ==
        "s3://bkt/fm/x.gz: HEAD: no answer (Failed to connect to 127.0.0.1 port 9) (3 attempts)");
  CHECK(o.diagnostic.fix.find("check the network") != std::string::npos);
  Answer busy{500, "", "InternalError", "", ""};
  CHECK(request_failure(url, "GET bytes 0-9", busy, 5, "", "")
            .diagnostic.fix.find("try again later") != std::string::npos);
}

TEST_CASE("s3: the client's credentials say where they came from, never what", "[s3]") {
  test_files::TempDir dir("s3");
  ClientOptions options;
  options.cache_root = dir.path();
  auto client = Client::create(
      options, fake_env({{"AWS_ACCESS_KEY_ID", "AKIDx"}, {"AWS_SECRET_ACCESS_KEY", "SECRETx"}}));
  REQUIRE(client);
  CHECK((*client)->credentials().kind == "environment");
  CHECK((*client)->credentials().detail.find("SECRETx") == std::string::npos);
  if (!built_with_curl()) {
    auto r = (*client)->fetch({"bkt", "k"});
    REQUIRE_FALSE(r);
    CHECK(r.error().find("without libcurl") != std::string::npos);
  }
}
