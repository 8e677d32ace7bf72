// The same 8-to-1 incast as incast.c, from a SimGrid C++ (s4u) program: the plugins' headers are
// C with extern "C" linkage, so a C++ program includes and links them as they are.
//
//   sgfabric platform --gpus 16 --radix 8 -o cluster.xml
//   ./incast_cpp cluster.xml roce
#include <sgfabric.h>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char *argv[])
{
  simgrid::s4u::Engine engine(&argc, argv);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PLATFORM.xml ib|roce|ideal\n", argv[0]);
    return 2;
  }
  const std::string model = argv[2];
  if (model == "ib")
    sg_ib_plugin_init();
  else if (model == "roce")
    sg_roce_plugin_init();
  else if (model != "ideal") {
    std::fprintf(stderr, "%s: unknown fabric '%s' (ib, roce or ideal)\n", argv[0], model.c_str());
    return 2;
  }
  char err[512];
  const char *cfg[] = { "roce/dcqcn:nic", nullptr }; // a setting, as --cfg would give it
  sgf_load_options opt{ "packet", 1, model == "roce" ? cfg : nullptr };
  struct fabric *fab = sgf_load_platform(argv[1], &opt, err, sizeof err);
  if (fab == nullptr) {
    std::fprintf(stderr, "%s: %s\n", argv[0], err);
    return 1;
  }

  const double bytes = 16.0 * 1024 * 1024;
  double last_delivery = 0; // the incast's completion (SimGrid's clock may run on: model timers)
  for (int gpu = 8; gpu < 16; gpu++) {
    simgrid::s4u::Host *host = simgrid::s4u::Host::by_name_or_null("gpu" + std::to_string(gpu));
    if (host == nullptr || sgf_host_gpu(host) != gpu) {
      std::fprintf(stderr, "%s: %s has no host gpu%d (16 GPUs needed)\n", argv[0], argv[1], gpu);
      sgf_unload();
      return 1;
    }
    simgrid::s4u::Actor::create("sender", host, [bytes, &last_delivery] {
      int src = sgf_host_gpu(simgrid::s4u::this_actor::get_host());
      double done = sgf_wait(sgf_isend(src, 0, bytes, 0));
      std::printf("gpu%d -> gpu0: %.0f bytes delivered at %.6f s\n", src, bytes, done);
      last_delivery = std::max(last_delivery, done);
    });
  }
  engine.run();

  std::printf("incast done at %.6f s on %s\n", last_delivery, model.c_str());
  if (model == "ib")
    std::printf("ib: credit stall summed over ports: %.6f s\n", sg_ib_get_credit_stall_time(fab));
  else if (model == "roce")
    std::printf("roce: %llu PFC pause frames, %llu ECN marks, %llu CNPs\n",
                static_cast<unsigned long long>(sg_roce_get_pause_frames(fab)),
                static_cast<unsigned long long>(sg_roce_get_ecn_marks(fab)),
                static_cast<unsigned long long>(sg_roce_get_cnps(fab)));
  sgf_unload();
  return 0;
}
