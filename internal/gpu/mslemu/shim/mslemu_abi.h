// mslemu_abi.h — the interface between the kernels' translation unit (through
// metal_stdlib.h) and the mslemu runtime (runtime.cpp). Both are compiled into one shared
// library per source set; nothing here is visible to MSL code except through the shim.
#ifndef MSLEMU_ABI_H
#define MSLEMU_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MSLEMU_HIDDEN __attribute__((visibility("hidden")))
#define MSLEMU_EXPORT __attribute__((visibility("default")))

#define MSLEMU_SIMD_WIDTH 32
#define MSLEMU_MAX_BINDINGS 32
// Metal's threadgroup memory limit on Apple GPUs.
#define MSLEMU_MAX_TG_MEMORY 32768

// The builtin values of one thread ([[thread_position_in_grid]] and friends).
struct mslemu_thread_info {
  uint32_t tpig[3];   // thread_position_in_grid
  uint32_t tgpig[3];  // threadgroup_position_in_grid
  uint32_t tpitg[3];  // thread_position_in_threadgroup
  uint32_t tptg[3];   // threads_per_threadgroup
  uint32_t tgpg[3];   // threadgroups_per_grid
  uint32_t tpg[3];    // threads_per_grid
  uint32_t tiitg;     // thread_index_in_threadgroup
  uint32_t tiisg;     // thread_index_in_simdgroup
  uint32_t sgitg;     // simdgroup_index_in_threadgroup
  uint32_t sgptg;     // simdgroups_per_threadgroup
  uint32_t width;     // thread_execution_width
};

// One lane's part in a SIMD-group collective: pointers into the lane's own stack, valid
// while the lane is blocked in the collective.
struct mslemu_lane {
  const void* val;
  void* res;
  int64_t arg;
};

// The lanes that execute one collective together: lane[l] is set for l in mask.
struct mslemu_group {
  uint32_t mask;   // the participating (active) lanes
  uint32_t exist;  // the lanes of the SIMD group that exist (a partial threadgroup has fewer)
  struct mslemu_lane* lane[MSLEMU_SIMD_WIDTH];
};

typedef void (*mslemu_combine_fn)(const struct mslemu_group*);

// Runtime services called from kernel code (on the fiber of the calling thread).
MSLEMU_HIDDEN const struct mslemu_thread_info* mslemu_cur_info(void);
MSLEMU_HIDDEN void* mslemu_buffer_ptr(int index);
MSLEMU_HIDDEN void* mslemu_tg_arg_ptr(int index);
MSLEMU_HIDDEN void* mslemu_tg_static(const void* key, uint64_t size, uint64_t align);
MSLEMU_HIDDEN void mslemu_barrier(int flags, const char* file, unsigned line, unsigned col);
MSLEMU_HIDDEN void mslemu_collective(struct mslemu_lane* me, mslemu_combine_fn fn, const char* file,
                                     unsigned line, unsigned col);
MSLEMU_HIDDEN __attribute__((noreturn)) void mslemu_fail(const char* msg);

// The launch record the Go side fills for mslemu_run: every field is 8 bytes.
struct mslemu_launch {
  uint64_t entry;  // void (*)(void): the kernel's generated entry
  int64_t grid[3];
  int64_t tptg[3];
  int64_t order;         // 0 forward, 1 reverse, 2 random
  uint64_t seed;
  int64_t worker_index;  // this call runs threadgroups worker_index, +worker_count, ...
  int64_t worker_count;
  int64_t slot;          // the worker slot (fiber stacks) this call may use exclusively
  int64_t flags;         // bit 0: lenient barriers (exited threads count as arrived)
  uint64_t buf_ptr[MSLEMU_MAX_BINDINGS];
  uint64_t buf_len[MSLEMU_MAX_BINDINGS];
  uint64_t tg_len[MSLEMU_MAX_BINDINGS];
  // results
  int64_t fault_sig;
  uint64_t fault_addr;
  int64_t fail_group[3];   // the threadgroup that failed
  int64_t fail_thread[3];  // the thread that faulted (-1 when not one thread)
  int64_t groups_run;
  char err[1024];
};

MSLEMU_EXPORT int64_t mslemu_abi_version(void);
MSLEMU_EXPORT int64_t mslemu_run(struct mslemu_launch* L);
MSLEMU_EXPORT int64_t mslemu_shared_size(void);
MSLEMU_EXPORT int64_t mslemu_launch_size(void);
MSLEMU_EXPORT int64_t mslemu_init(void* shared);

#define MSLEMU_ABI_VERSION 1

#ifdef __cplusplus
}
#endif

#endif
