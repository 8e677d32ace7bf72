/* The collectives' parameters ("coll/..."): algorithm, channels, pipelining chunk, NCCL protocol costs. */
#ifndef SGFABRIC_COLL_PARAMS_H
#define SGFABRIC_COLL_PARAMS_H

#include "coll.h"
#include "param.h"

extern const struct param_def coll_param_table[];
void coll_register_params(void);
/* Reads the registered values into p. */
void coll_params_from(const struct param_set *set, struct coll_params *p);

#endif
