// defloader at check time (core/runfile/loaders.h): the batch types that
// prepare and objective are staged on, the epoch arithmetic `check` reports,
// path lookup relative to the run file, and the errors' codes and messages.
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "runfile/loaders.h"
#include "runfile/session.h"

using namespace sexpgpu;
using runfile::LoaderDecl;

namespace {

std::vector<std::string> types_of(const LoaderDecl& d, int64_t rows = 0) {
  std::vector<std::string> out;
  for (const runfile::BatchFieldType& f : d.batch_types(rows))
    out.push_back(f.name + " " + f.type.to_string());
  return out;
}

std::vector<std::string> codes(const runfile::Session& s) {
  std::vector<std::string> out;
  for (const Diagnostic& d : s.sink.all()) out.push_back(d.code);
  return out;
}

}  // namespace

TEST_CASE("synthetic loaders: batch types and epochs", "[runfile][loaders]") {
  runfile::Session s;
  s.load_source("/nowhere/run.lisp", R"(
    (defloader train :source (synthetic :regression :features 8 :examples 100 :seed 1)
      :batch 32 :shuffle t :drop-last t)
    (defloader valid :source (synthetic :blobs :classes 3 :features 4 :examples 100)
      :split (0.9 1.0) :batch 8 :seed 5)
    (defloader lm :source (synthetic :random-tokens :vocab 50 :seq-len 12 :examples 40) :batch 5
      :stages ((:short :batch 2 :seq-len 6) (:long))))");
  REQUIRE(codes(s).empty());
  const runfile::Loaders& all = runfile::loaders_of(*s.interp);
  REQUIRE(all.decls.size() == 3);

  const LoaderDecl& train = *all.find("train");
  CHECK(types_of(train) == std::vector<std::string>{"x f32[32,8]", "y f32[32,1]"});
  CHECK(train.options.shuffle);
  CHECK(train.options.drop_last);
  CHECK_FALSE(train.has_seed);
  CHECK(train.batches_per_epoch == 3);  // 100 = 3 * 32 + 4, the 4 dropped
  CHECK(train.last_batch_size == 32);
  CHECK(train.source->size() == 100);

  const LoaderDecl& valid = *all.find("valid");
  CHECK(types_of(valid) == std::vector<std::string>{"x f32[8,4]", "y i32[8]"});
  CHECK(valid.options.split_from == 0.9);
  CHECK(valid.options.split_to == 1.0);
  CHECK(valid.has_seed);
  CHECK(valid.options.seed == 5);
  CHECK(valid.batches_per_epoch == 2);  // examples 90..99: 8 + 2
  CHECK(valid.last_batch_size == 2);
  CHECK(types_of(valid, valid.last_batch_size) ==
        std::vector<std::string>{"x f32[2,4]", "y i32[2]"});

  const LoaderDecl& lm = *all.find("lm");
  CHECK(types_of(lm) == std::vector<std::string>{"x i32[5,12]", "y i32[5,12]"});
  REQUIRE(lm.stages.size() == 2);
  CHECK(lm.stages[0].first == "short");
  CHECK(lm.stages[0].second.batch == 2);
  CHECK(lm.stages[0].second.seq_len == 6);
  CHECK(lm.stages[1].first == "long");
  CHECK_FALSE(lm.stages[1].second.batch.has_value());
  CHECK(all.find("test") == nullptr);
}

TEST_CASE("a relative path is found next to the run file", "[runfile][loaders]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "sexpgpu-test-runfile-loaders";
  fs::create_directories(dir);
  std::ofstream(dir / "corpus.txt", std::ios::binary) << std::string(100, 'a');
  runfile::Session s;
  s.load_source((dir / "run.lisp").string(),
                "(defloader text :source (text \"corpus.txt\" :seq-len 9) :batch 4)");
  REQUIRE(codes(s).empty());
  const LoaderDecl& text = *runfile::loaders_of(*s.interp).find("text");
  CHECK(text.source->size() == 11);  // floor((100 - 1) / 9) windows
  CHECK(types_of(text) == std::vector<std::string>{"x i32[4,9]", "y i32[4,9]"});
  CHECK(text.batches_per_epoch == 3);
  CHECK(text.last_batch_size == 3);
  fs::remove_all(dir);
}

TEST_CASE("csv columns are written as data, without a quote", "[runfile][loaders]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "sexpgpu-test-runfile-csv";
  fs::create_directories(dir);
  std::ofstream(dir / "iris.csv", std::ios::binary) << "a,b,c,label\n1,2,3,0\n4,5,6,1\n7,8,9,2\n";
  runfile::Session s;
  s.load_source((dir / "run.lisp").string(), R"(
    (defloader rows :source (csv "iris.csv" :columns ((:x :f32 (0 1 2)) (:y :i32 3)) :header t)
      :batch 2))");
  REQUIRE(codes(s).empty());
  const LoaderDecl& rows = *runfile::loaders_of(*s.interp).find("rows");
  CHECK(rows.source->size() == 3);
  CHECK(types_of(rows) == std::vector<std::string>{"x f32[2,3]", "y i32[2]"});
  CHECK(rows.batches_per_epoch == 2);
  CHECK(rows.last_batch_size == 1);
  fs::remove_all(dir);
}

TEST_CASE("loader errors: codes, places and messages", "[runfile][loaders]") {
  runfile::Session s;
  std::string ignored;
  s.interp->output = &ignored;
  s.load_source("/nowhere/run.lisp",
                R"((defloader a :source (idx "none/img.gz" "none/lab.gz") :batch 8)
(defloader b :source (synthetic :regression :features 2 :examples 10) :batch 2)
(defloader b :source (synthetic :regression :features 2 :examples 10) :batch 2)
(defloader c :source (synthetic :regression :features 2 :examples 10) :batch 2 :split (0.5 0.5))
(field (list :x 1 :y 2) :z))");
  const std::vector<Diagnostic>& d = s.sink.all();
  REQUIRE(codes(s) == std::vector<std::string>{"E-LOADER-SOURCE", "E-LOADER-SOURCE",
                                               "E-LOADER-SOURCE", "E-LOADER-FIELD"});
  CHECK(d[0].message.find("none/img.gz") != std::string::npos);
  CHECK(d[0].message.find("missing") != std::string::npos);
  CHECK(d[0].span.line == 1);
  CHECK(d[1].message == "loader b is defined twice");
  CHECK(d[1].span.line == 3);
  CHECK(d[2].message.find("needs 0 <= FROM < TO <= 1") != std::string::npos);
  CHECK(d[3].message == "the batch has no field :z: the batch has :x, :y");
  CHECK(d[3].span.line == 5);
  // The failed loaders are not recorded; the good one is, once.
  CHECK(runfile::loaders_of(*s.interp).decls.size() == 1);
}

TEST_CASE("Fashion-MNIST from the system's dataset directory", "[runfile][loaders][fashion]") {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    WARN("skipped: /usr/share/datasets/fashion-mnist is not installed (dataset-fashion-mnist)");
    return;
  }
  runfile::Session s;
  s.load_source("/nowhere/run.lisp", R"(
    (defloader train :source (idx "fashion-mnist/train-images-idx3-ubyte.gz"
                                  "fashion-mnist/train-labels-idx1-ubyte.gz")
      :batch 128 :shuffle t :drop-last t)
    (defloader test :source (idx "fashion-mnist/t10k-images-idx3-ubyte.gz"
                                 "fashion-mnist/t10k-labels-idx1-ubyte.gz") :batch 1000))");
  REQUIRE(codes(s).empty());
  const runfile::Loaders& all = runfile::loaders_of(*s.interp);
  const LoaderDecl& train = *all.find("train");
  CHECK(train.source->size() == 60000);
  CHECK(types_of(train) == std::vector<std::string>{"x u8[128,28,28]", "y i32[128]"});
  CHECK(train.batches_per_epoch == 468);  // 60000 = 468 * 128 + 96, dropped
  CHECK(train.last_batch_size == 128);
  const LoaderDecl& test = *all.find("test");
  CHECK(test.source->size() == 10000);
  CHECK(types_of(test) == std::vector<std::string>{"x u8[1000,28,28]", "y i32[1000]"});
  CHECK(test.batches_per_epoch == 10);
}
