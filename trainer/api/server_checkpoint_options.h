// Restart under SSP and async: the PS servers hold the weights and the optimizer state, so they
// checkpoint them (ps/checkpoint/), and each worker adds its trainer's own state (its data
// position, its random state) at the same clocks.
//
// The servers checkpoint every `every` clocks by themselves, each chunk the moment it reaches the
// clock, so no request can arrive too late: a worker's iteration N is the servers' clock N. After
// such an iteration every worker calls Session::saveCheckpoint(dir, extra), which writes
// <dir>/worker-<rank>-<N>.ckpt. With `resume` the job goes on from the newest clock every server
// has a checkpoint of and every worker a file of (ps/checkpoint/resume.h): a crash after the
// servers wrote clock N but before some worker wrote its file of N resumes from an older clock,
// not into a worker's missing state. Session::restoreCheckpoint(dir) then returns the worker's
// `extra` of that clock, and Session::iteration() says which it is.
//
// The servers' clock N holds each chunk when the slowest worker reached N, with the faster
// workers' next updates in it; resumed, those workers' pushes of such clocks are counted but not
// applied again (ps/README.md), so every update the checkpoint holds counts once, however often
// the job resumes. A resumed SSP / async run is still a valid run, not the same bits as one that
// never stopped: pushes are applied as they arrive and workers read other versions.
//
// Best effort, as on the servers: a worker keeps its newest `keep` files up to the clock every
// server has written, the servers their newest `keep` such clocks; when a server skipped a
// checkpoint the two can keep different clocks, and a crash right then may leave no clock every
// rank has (the resume then fails naming what each holds, and removes nothing).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "ps/consistency.h"

namespace poseidon::trainer {

// Every rank gives the same (each rank's join() checks its own). The workers compare theirs at
// start(); the servers checkpoint as worker 0 asks (every, keep, resume), into their own `dir`.
struct ServerCheckpointOptions {
  // On each rank's machine: the servers' files (server-<s>.clock-<T>.ckpt) and the workers'
  // (worker-<rank>-<T>.ckpt). Empty: none.
  std::string dir;
  // Clocks (iterations) between checkpoints; 0: none written (a run that only resumes).
  uint64_t every = 0;
  // The newest checkpoints every server has written that each keeps (ps::ServerOptions); keep 2
  // or more, so that a crash while the newest is written leaves one every rank has.
  int keep = 2;
  bool resume = false;  // go on from the newest clock every rank has in `dir` (none: from 0)
};

// kInvalidArgument naming the field: a `dir` under BSP (the workers hold the state there:
// saveCheckpoint writes it all), `every` or `resume` without a `dir`, a `dir` with neither,
// `keep` out of range, async with n_push > 1 (the servers' clock counts pushes, not iterations).
Status validateServerCheckpoints(const ServerCheckpointOptions& options, const ps::Consistency& consistency);

}  // namespace poseidon::trainer
