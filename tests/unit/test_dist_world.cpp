// The world from the rank variables (core/dist/world.cpp): each family,
// which one wins, torchrun's store port, and every E-WORLD the variables
// can cause, each naming its variable.
#include <map>
#include <string>

#include "catch.hpp"
#include "dist/world.h"

namespace {

using sexpgpu::Result;
using sexpgpu::dist::World;
using Env = std::map<std::string, std::string>;

Result<World> world(const Env& env) {
  return sexpgpu::dist::world_from_env([&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

// The failure must be E-WORLD, name `variable` and carry a fix.
void check_error(const Env& env, const std::string& variable) {
  Result<World> w = world(env);
  INFO("expected E-WORLD naming " << variable);
  REQUIRE_FALSE(w.ok());
  CHECK(w.code() == "E-WORLD");
  CHECK(w.error().find(variable) != std::string::npos);
  CHECK_FALSE(w.diagnostic().fix.empty());
}

}  // namespace

TEST_CASE("no variable is a world of one, with the default timeout", "[dist]") {
  Result<World> w = world({});
  REQUIRE(w.ok());
  CHECK(w->rank == 0);
  CHECK(w->size == 1);
  CHECK(w->local_rank == 0);
  CHECK_FALSE(w->several());
  CHECK(w->master_host.empty());
  CHECK(w->origin.empty());
  CHECK(w->timeout == std::chrono::seconds(120));
  // Empty values count as unset, as for every variable.
  CHECK(world({{"SEXPGPU_WORLD_SIZE", ""}, {"WORLD_SIZE", ""}})->origin.empty());
}

TEST_CASE("SEXPGPU_WORLD_SIZE=1 alone is a world of one", "[dist]") {
  Result<World> w = world({{"SEXPGPU_WORLD_SIZE", "1"}});
  REQUIRE(w.ok());
  CHECK(w->size == 1);
  CHECK_FALSE(w->several());
  CHECK(w->origin == "SEXPGPU_*");
  CHECK(world({{"WORLD_SIZE", "1"}, {"RANK", "0"}})->size == 1);
  CHECK(world({{"SLURM_NTASKS", "1"}, {"SLURM_PROCID", "0"}})->size == 1);
}

TEST_CASE("the SEXPGPU_ family", "[dist]") {
  Result<World> w = world({{"SEXPGPU_WORLD_SIZE", "4"},
                           {"SEXPGPU_RANK", "3"},
                           {"SEXPGPU_LOCAL_RANK", "1"},
                           {"SEXPGPU_MASTER", "node0.example:29600"}});
  REQUIRE(w.ok());
  CHECK(w->rank == 3);
  CHECK(w->size == 4);
  CHECK(w->local_rank == 1);
  CHECK(w->master_host == "node0.example");
  CHECK(w->master_port == 29600);
  CHECK(w->master() == "node0.example:29600");
  CHECK(w->origin == "SEXPGPU_*");
  CHECK(w->several());
  // Without a local rank: 0 (a world of CPU processes needs none).
  CHECK(world({{"SEXPGPU_WORLD_SIZE", "2"}, {"SEXPGPU_RANK", "1"}, {"SEXPGPU_MASTER", "h:1"}})
            ->local_rank == 0);
}

TEST_CASE("torchrun's variables: the store listens on MASTER_PORT + 1", "[dist]") {
  Result<World> w = world({{"WORLD_SIZE", "8"},
                           {"RANK", "5"},
                           {"LOCAL_RANK", "1"},
                           {"MASTER_ADDR", "10.0.0.7"},
                           {"MASTER_PORT", "29500"}});
  REQUIRE(w.ok());
  CHECK(w->rank == 5);
  CHECK(w->size == 8);
  CHECK(w->local_rank == 1);
  CHECK(w->master_host == "10.0.0.7");
  CHECK(w->master_port == 29501);
  CHECK(w->origin.rfind("torchrun", 0) == 0);
  // SEXPGPU_MASTER is not of this family: torchrun's address wins.
  Result<World> t = world({{"WORLD_SIZE", "2"},
                           {"RANK", "0"},
                           {"MASTER_ADDR", "a"},
                           {"MASTER_PORT", "100"},
                           {"SEXPGPU_MASTER", "b:7"}});
  CHECK(t->master() == "a:101");
}

TEST_CASE("Slurm's variables, the master from SEXPGPU_MASTER or MASTER_ADDR and MASTER_PORT",
          "[dist]") {
  Env slurm{{"SLURM_NTASKS", "3"}, {"SLURM_PROCID", "2"}, {"SLURM_LOCALID", "0"}};
  Env with_master = slurm;
  with_master["SEXPGPU_MASTER"] = "gpu01:29600";
  with_master["MASTER_ADDR"] = "ignored";
  with_master["MASTER_PORT"] = "1";
  Result<World> w = world(with_master);
  REQUIRE(w.ok());
  CHECK(w->rank == 2);
  CHECK(w->size == 3);
  CHECK(w->master() == "gpu01:29600");
  CHECK(w->origin.rfind("Slurm", 0) == 0);
  Env with_addr = slurm;
  with_addr["MASTER_ADDR"] = "gpu01";
  with_addr["MASTER_PORT"] = "29500";
  CHECK(world(with_addr)->master() == "gpu01:29500");  // no torchrun store: the port itself
}

TEST_CASE("the first family whose size is set wins, and is taken whole", "[dist]") {
  Env all{{"SEXPGPU_WORLD_SIZE", "2"}, {"SEXPGPU_RANK", "1"}, {"SEXPGPU_MASTER", "s:1"},
          {"WORLD_SIZE", "4"},         {"RANK", "3"},         {"MASTER_ADDR", "t"},
          {"MASTER_PORT", "5"},        {"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "7"}};
  Result<World> w = world(all);
  REQUIRE(w.ok());
  CHECK(w->size == 2);
  CHECK(w->rank == 1);
  CHECK(w->master() == "s:1");
  all.erase("SEXPGPU_WORLD_SIZE");
  all.erase("SEXPGPU_RANK");
  w = world(all);
  CHECK(w->size == 4);
  CHECK(w->rank == 3);
  all.erase("WORLD_SIZE");
  w = world(all);
  CHECK(w->size == 8);
  CHECK(w->rank == 7);
  CHECK(w->master() == "s:1");
  // Taken whole: SEXPGPU_WORLD_SIZE's family has no rank though RANK is set.
  check_error({{"SEXPGPU_WORLD_SIZE", "2"}, {"RANK", "1"}, {"SEXPGPU_MASTER", "h:1"}},
              "SEXPGPU_RANK");
}

TEST_CASE("SEXPGPU_RANK_TIMEOUT: seconds from 1 to 86400", "[dist]") {
  CHECK(world({{"SEXPGPU_RANK_TIMEOUT", "7"}})->timeout == std::chrono::seconds(7));
  CHECK(world({{"SEXPGPU_RANK_TIMEOUT", "86400"}})->timeout == std::chrono::hours(24));
  Result<World> w = world({{"WORLD_SIZE", "2"},
                           {"RANK", "1"},
                           {"MASTER_ADDR", "h"},
                           {"MASTER_PORT", "9"},
                           {"SEXPGPU_RANK_TIMEOUT", "1"}});
  CHECK(w->timeout == std::chrono::seconds(1));
  for (const char* bad : {"0", "86401", "-5", "1.5", "ten", " 7", "99999999999999999999"})
    check_error({{"SEXPGPU_RANK_TIMEOUT", bad}}, "SEXPGPU_RANK_TIMEOUT");
}

TEST_CASE("malformed and inconsistent sizes and ranks are E-WORLD naming the variable", "[dist]") {
  Env master{{"SEXPGPU_MASTER", "h:1"}};
  auto with = [&](Env env) {
    env.insert(master.begin(), master.end());
    return env;
  };
  check_error(with({{"SEXPGPU_WORLD_SIZE", "0"}}), "SEXPGPU_WORLD_SIZE");
  check_error(with({{"SEXPGPU_WORLD_SIZE", "65537"}, {"SEXPGPU_RANK", "0"}}), "SEXPGPU_WORLD_SIZE");
  check_error(with({{"SEXPGPU_WORLD_SIZE", "two"}}), "SEXPGPU_WORLD_SIZE");
  check_error(with({{"SEXPGPU_WORLD_SIZE", "2"}, {"SEXPGPU_RANK", "2"}}), "SEXPGPU_RANK");
  check_error(with({{"SEXPGPU_WORLD_SIZE", "2"}, {"SEXPGPU_RANK", "-1"}}), "SEXPGPU_RANK");
  check_error(with({{"SEXPGPU_WORLD_SIZE", "2"}}), "SEXPGPU_RANK");  // missing above one
  check_error(
      with({{"SEXPGPU_WORLD_SIZE", "2"}, {"SEXPGPU_RANK", "0"}, {"SEXPGPU_LOCAL_RANK", "2"}}),
      "SEXPGPU_LOCAL_RANK");
  check_error({{"SEXPGPU_WORLD_SIZE", "1"}, {"SEXPGPU_RANK", "1"}}, "SEXPGPU_RANK");
  // A rank without a size is a launch that forgot the size.
  check_error({{"SEXPGPU_RANK", "1"}}, "SEXPGPU_WORLD_SIZE");
  check_error({{"SEXPGPU_LOCAL_RANK", "0"}}, "SEXPGPU_WORLD_SIZE");
  check_error({{"WORLD_SIZE", "4"}, {"RANK", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}},
              "RANK");
  check_error({{"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}, "RANK");
  check_error({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "9"}, {"SEXPGPU_MASTER", "h:1"}},
              "SLURM_PROCID");
  check_error({{"SLURM_NTASKS", "4"}, {"SEXPGPU_MASTER", "h:1"}}, "SLURM_PROCID");
  check_error({{"SLURM_NTASKS", "4"},
               {"SLURM_PROCID", "1"},
               {"SLURM_LOCALID", "x"},
               {"SEXPGPU_MASTER", "h:1"}},
              "SLURM_LOCALID");
}

TEST_CASE("a world above one needs a master, and its port is range-checked", "[dist]") {
  Env two{{"SEXPGPU_WORLD_SIZE", "2"}, {"SEXPGPU_RANK", "0"}};
  check_error(two, "SEXPGPU_MASTER");
  for (const char* bad : {"node0", "node0:", ":29600", "node0:0", "node0:65536", "node0:http"}) {
    Env e = two;
    e["SEXPGPU_MASTER"] = bad;
    check_error(e, "SEXPGPU_MASTER");
  }
  Env ok = two;
  ok["SEXPGPU_MASTER"] = "node0:65535";
  CHECK(world(ok)->master_port == 65535);

  Env torchrun{{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "h"}};
  check_error(torchrun, "MASTER_PORT");
  torchrun["MASTER_PORT"] = "65535";  // + 1 is no port
  check_error(torchrun, "MASTER_PORT");
  torchrun["MASTER_PORT"] = "65534";
  CHECK(world(torchrun)->master_port == 65535);
  check_error({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_PORT", "5"}}, "MASTER_ADDR");

  Env slurm{{"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "0"}};
  check_error(slurm, "SEXPGPU_MASTER");
  slurm["MASTER_ADDR"] = "h";
  check_error(slurm, "MASTER_PORT");
  slurm["MASTER_PORT"] = "0";
  check_error(slurm, "MASTER_PORT");
}
