// The one C++ file of the fabric: a SimGrid kernel model that drives the fabric's calendar.
//
// SimGrid 3.32 offers no C hook for a model that owns its own events; Engine::add_model with a
// subclass of kernel::resource::Model (public header) is the supported way. SimGrid polls
// next_occurring_event(now) at every step for the delay to our next event, and calls
// update_actions_state(now, delta) once its clock reached the chosen date.
#include <cstdio>
#include <exception>
#include <memory>
#include <simgrid/kernel/resource/Model.hpp>
#include <simgrid/s4u/Engine.hpp>

extern "C" {
double sgf_model_next(double now);
void sgf_model_advance(double now);
void sgf_glue_add_model(void);
int sgf_glue_load_platform(const char *path, char *err, size_t errlen);
}

namespace
{
class FabricModel : public simgrid::kernel::resource::Model
{
public:
  FabricModel() : Model("sgfabric") {}
  double next_occurring_event(double now) override { return sgf_model_next(now); }
  void update_actions_state(double now, double /*delta*/) override { sgf_model_advance(now); }
};
} // namespace

// SimGrid reports a platform it cannot read by throwing (ParseError names the file and line);
// uncaught, that aborts the process with a backtrace. The platform reader validates what it can
// first (plugins/fabric/platform.c); this is the net for whatever SimGrid refuses beyond that.
int sgf_glue_load_platform(const char *path, char *err, size_t errlen)
{
  try {
    simgrid::s4u::Engine::get_instance()->load_platform(path);
  } catch (const std::exception &e) {
    std::snprintf(err, errlen, "%s: SimGrid cannot load the platform: %s", path, e.what());
    return -1;
  }
  return 0;
}

void sgf_glue_add_model(void) { simgrid::s4u::Engine::get_instance()->add_model(std::make_shared<FabricModel>()); }
