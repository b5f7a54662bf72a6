// step_bench: times one staged function (forward and backward) on the CPU
// device, the SexpGPU side of bench/cpu_vs_torch.py.
//
//   step_bench FILE.lisp FN [--data FILE --batch B] [--iters N] [--threads T]
//
// FILE stages FN with stage-function. Parameters start from N(0, 0.05²);
// with --data, the inputs named x (f32) and y (i32) cycle through the
// batches of FILE (each batch: B*features f32 then B i32, as
// cpu_vs_torch.py writes them), otherwise every input is N(0, 1). Prints
// one JSON line: {"fn", "ms_per_step", "steps_per_s", "arena_bytes"}.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "cpu/program.h"
#include "ir/passes.h"
#include "runfile/session.h"
#include "stage/stager.h"

using namespace sexpgpu;

namespace {

struct Args {
  std::string file, fn, data;
  int iters = 200, threads = 0;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "step_bench: " << why
            << "\nusage: step_bench FILE.lisp FN [--data FILE] [--iters N] [--threads T]\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(s + " needs a value");
      return argv[++i];
    };
    if (s == "--data")
      a.data = next();
    else if (s == "--iters")
      a.iters = std::stoi(next());
    else if (s == "--threads")
      a.threads = std::stoi(next());
    else
      pos.push_back(s);
  }
  if (pos.size() != 2) usage("give FILE and FN");
  a.file = pos[0];
  a.fn = pos[1];
  return a;
}

std::vector<char> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) usage("cannot read " + path);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  runfile::Session session;
  std::string io_error;
  if (!session.load_file(args.file, &io_error)) usage(io_error);
  for (const Diagnostic& d : session.sink.all())
    std::cerr << render_human(session.sources, d, false);
  if (session.sink.error_count()) return 1;
  ir::Module module = stage::stager_of(*session.interp).module();
  ir::Function* fn = module.find(args.fn);
  if (!fn) usage(args.file + " stages no function " + args.fn);
  if (std::string broken = ir::optimize(module, *fn); !broken.empty()) usage(broken);
  cpu::Options options;
  options.threads = args.threads;
  auto program = cpu::Program::compile(module, args.fn, options);
  if (!program) usage(program.error());

  // Inputs: parameters and unnamed inputs random; x and y from the data.
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<cpu::HostTensor> inputs;
  int x_index = -1, y_index = -1;
  for (ir::NodeId id : fn->inputs) {
    const ir::Node& n = fn->node(id);
    std::vector<double> values(size_t(*n.type.shape.numel()));
    double scale = n.op == ir::Op::Param ? 0.05 : 1.0;
    for (double& v : values) v = normal(rng) * scale;
    if (!ir::is_float(n.type.dtype))
      for (double& v : values) v = 0;
    if (*n.attrs.name == "x") x_index = int(inputs.size());
    if (*n.attrs.name == "y") y_index = int(inputs.size());
    inputs.push_back(cpu::HostTensor::from_doubles(n.type, values));
  }
  std::vector<char> data;
  size_t batch_bytes = 0, batches = 0, x_bytes = 0;
  if (!args.data.empty()) {
    if (x_index < 0 || y_index < 0) usage(args.fn + " has no inputs named x and y");
    data = read_all(args.data);
    x_bytes = inputs[size_t(x_index)].bytes.size();
    batch_bytes = x_bytes + inputs[size_t(y_index)].bytes.size();
    batches = data.size() / batch_bytes;
    if (batches == 0) usage(args.data + " holds no whole batch");
  }
  std::vector<cpu::HostTensor> outputs;
  for (const ir::Output& o : fn->outputs)
    outputs.push_back(cpu::HostTensor::zeros(fn->type(o.node)));
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (auto& t : outputs) out_ptrs.push_back(t.bytes.data());

  auto step = [&](int i) {
    in_ptrs.clear();
    for (size_t k = 0; k < inputs.size(); ++k) in_ptrs.push_back(inputs[k].bytes.data());
    if (batches) {
      const char* b = data.data() + size_t(i % int(batches)) * batch_bytes;
      in_ptrs[size_t(x_index)] = b;
      in_ptrs[size_t(y_index)] = b + x_bytes;
    }
    std::string err = (*program)->run(in_ptrs, out_ptrs);
    if (!err.empty()) usage("run failed: " + err);
  };
  for (int i = 0; i < 10; ++i) step(i);  // warm up caches and threads
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < args.iters; ++i) step(i);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double ms = seconds * 1000 / args.iters;
  std::printf(
      "{\"fn\": \"%s\", \"ms_per_step\": %.4f, \"steps_per_s\": %.1f, \"arena_bytes\": %zu}\n",
      args.fn.c_str(), ms, 1000 / ms, (*program)->arena_bytes());
  (void)session.interp.release();  // exiting: the OS frees the compile-time heap
  return 0;
}
