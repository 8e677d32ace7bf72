/* The replay's parameters ("replay/..."): which engine steps the ranks (replay.h). */
#include "replay.h"

const struct param_def replay_param_table[] = {
  { "replay/engine", PARAM_ENUM, UNIT_NONE, "actors", 0, 0, "actors|events",
    "How ranks are run: actors (one SimGrid actor per rank, blocking on semaphores and sleeping through "
    "compute) or events (each rank a program counter stepped inside the fabric's events: the same model "
    "without a context switch per op, several times faster at 10,000 ranks; ranks acting at the same date "
    "act in another order, so results differ slightly, docs/performance.md)",
    "assumption: equal-date order is a simulation artefact (docs/performance.md measures its effect)" },
  { NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

void replay_register_params(void) { fab_param_register(replay_param_table); }

int replay_event_engine_from(const struct param_set *set) { return fab_param_get_choice(set, "replay/engine") == 1; }
