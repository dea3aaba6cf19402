// runtime.cpp — mslemu's execution engine, compiled into every kernel library.
//
// A dispatch runs its threadgroups one after another on the calling OS thread (the Go
// side may split the threadgroups over several OS threads, each with its own worker
// slot). Within a threadgroup every thread is a fiber with its own mmap'd stack and a
// guard region below it. A pass runs the runnable fibers in the selected order (forward,
// reverse or a seeded random permutation per pass), each until it blocks at a barrier or
// a SIMD-group collective or returns; a blocking fiber switches directly to the next
// runnable one, and the last returns to the scheduler. When every fiber is blocked or
// done:
//
//   - SIMD collectives: in each SIMD group whose lanes wait at collectives, the lanes at
//     the earliest call site (file, line, column) form one group, its combine function
//     computes every member's result, and those lanes become runnable. Lanes that are at
//     a later site (they skipped a branch or left a loop early) keep waiting, as a GPU's
//     divergent lanes wait at the reconvergence point; lanes that returned are inactive.
//   - Barriers: when every thread is at a threadgroup_barrier at one site, all continue.
//     Threads that returned without reaching it, or threads at different barriers, are a
//     deadlock on a GPU and an error here (unless the launch is lenient).
//
// Kernel faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL) on a worker's OS thread during a run are
// caught by a signal handler that chains to the previous handler (the Go runtime's) for
// everything else, and reported through the launch record.
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mslemu_abi.h"

#if !defined(MSLEMU_UCONTEXT) && !defined(__x86_64__) && !defined(__aarch64__)
#define MSLEMU_UCONTEXT 1
#endif
#ifdef MSLEMU_UCONTEXT
#include <ucontext.h>
#endif

namespace {

enum State { RUNNABLE = 0, AT_BARRIER = 1, AT_COLL = 2, DONE = 3 };

constexpr size_t kStackSize = 128 * 1024;
// Each fiber stack is the top kStackSize bytes of a kRegion-aligned region whose rest is
// PROT_NONE: a large guard, so that a frame bigger than a page (a big thread-private
// array) still lands in it where the compiler does not probe the stack page by page
// (clang 14 ignores -fstack-clash-protection on arm64). The alignment lets code on a
// fiber find its Thread from the stack pointer (stored in the region's last word)
// without thread-local storage, which is slow in a dlopen'd library.
constexpr size_t kRegion = 256 * 1024;
constexpr size_t kStackGuard = kRegion - kStackSize;
constexpr int kMaxThreads = 1024;
constexpr int kMaxSlots = 64;
constexpr int kMaxStatics = 256;
#ifdef MSLEMU_STRICT_ALIGN
// Strict alignment (WithStrictAlignment): a threadgroup variable of alignment a < 16 is
// placed at an offset ≡ a (mod 2a), aligned for its own type and for nothing wider, so
// that a kernel which stores a wider type into it (a float4 into `threadgroup float
// x[]`) is misaligned here as it may be on a GPU, and the alignment sanitizer the
// library is then built with reports it. The padding (under 3a ≤ 48 bytes a variable)
// comes out of this slack beyond Metal's limit; the limit itself is checked on the
// unpadded layout.
constexpr size_t kTgSlack = 48 * kMaxStatics;
#else
constexpr size_t kTgSlack = 0;
#endif
// Bytes of threadgroup memory mapped: Metal's limit plus the strict mode's padding.
constexpr size_t kTgMapped = MSLEMU_MAX_TG_MEMORY + kTgSlack;

struct Worker;
struct Thread {
  Worker* worker;
#ifdef MSLEMU_UCONTEXT
  ucontext_t uc;
#else
  void* sp;
#endif
  char* map;        // the mapping: guard page, then the stack
  char* stack_lo;   // lowest usable byte
  char* stack_hi;   // one past the highest
  int state;
  int index;
  mslemu_thread_info info;
  const char* file;
  unsigned line, col;
  mslemu_lane* lane;
  mslemu_combine_fn fn;
};

struct Static {
  const void* key;  // the variable's key: its name, as a string (see source.go)
  void* ptr;
  uint64_t size;
};

struct Worker {
  Thread th[kMaxThreads];
  int nstacks;
#ifdef MSLEMU_UCONTEXT
  ucontext_t sched_uc;
#else
  void* sched_sp;
#endif
  Thread* cur;
  mslemu_launch* L;
  void (*entry)(void);
  int slot;
  sigjmp_buf jb;
  // threadgroup memory
  char* tg_map;
  char* tg_mem;   // kTgMapped bytes, a guard page after
  size_t tg_used;  // bytes laid out (with the strict mode's padding)
  size_t tg_acct;  // bytes Metal counts against its limit (each variable from a 16-byte boundary)
  size_t tg_dirty;
  void* tg_args[MSLEMU_MAX_BINDINGS];
  Static statics[kMaxStatics];
  int nstatics;
  int failed;
  uint64_t rng;
  int order[kMaxThreads];
  int pos;  // the next position in order to consider in this pass
  int nthreads;
  int64_t group[3];
};

Worker* g_workers[kMaxSlots];
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
size_t g_page;

// The Thread whose fiber is running (call only on a fiber).
inline Thread* cur_thread() {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  uintptr_t hi = (sp | (kRegion - 1)) + 1;
  return *(Thread**)(hi - sizeof(void*));
}

void errf(mslemu_launch* L, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void errf(mslemu_launch* L, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->err, sizeof L->err, fmt, ap);
  va_end(ap);
}
void errappend(mslemu_launch* L, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void errappend(mslemu_launch* L, const char* fmt, ...) {
  size_t n = strlen(L->err);
  if (n + 1 >= sizeof L->err) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->err + n, sizeof L->err - n, fmt, ap);
  va_end(ap);
}

// ---------------------------------------------------------------------------------------
// Context switch
#ifndef MSLEMU_UCONTEXT
extern "C" void mslemu_swap(void** save_sp, void* to_sp) MSLEMU_HIDDEN;
extern "C" void mslemu_fiber_tramp(void) MSLEMU_HIDDEN;
#if defined(__x86_64__)
// Saves the callee-saved registers on the current stack, stores the stack pointer in
// *save_sp, and resumes the context whose stack is to_sp. The floating-point control
// state (MXCSR, x87 control word; FPCR on arm64) is not switched: MSL cannot change it,
// so every fiber runs with the calling thread's.
asm(R"(
.text
.globl mslemu_swap
.hidden mslemu_swap
.type mslemu_swap,@function
.p2align 4
mslemu_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size mslemu_swap,.-mslemu_swap
.globl mslemu_fiber_tramp
.hidden mslemu_fiber_tramp
.type mslemu_fiber_tramp,@function
.p2align 4
mslemu_fiber_tramp:
    movq %r12, %rdi
    callq *%r13
    ud2
.size mslemu_fiber_tramp,.-mslemu_fiber_tramp
)");
#elif defined(__aarch64__)
// Saves x19-x30 and d8-d15; same contract as the x86-64 version.
asm(R"(
.text
.globl mslemu_swap
.hidden mslemu_swap
.type mslemu_swap,%function
.p2align 4
mslemu_swap:
    sub sp, sp, #160
    stp x19, x20, [sp, #0]
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    mov x9, sp
    str x9, [x0]
    mov sp, x1
    ldp x19, x20, [sp, #0]
    ldp x21, x22, [sp, #16]
    ldp x23, x24, [sp, #32]
    ldp x25, x26, [sp, #48]
    ldp x27, x28, [sp, #64]
    ldp x29, x30, [sp, #80]
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    add sp, sp, #160
    ret
.size mslemu_swap,.-mslemu_swap
.globl mslemu_fiber_tramp
.hidden mslemu_fiber_tramp
.type mslemu_fiber_tramp,%function
.p2align 4
mslemu_fiber_tramp:
    mov x0, x19
    blr x20
    brk #0
.size mslemu_fiber_tramp,.-mslemu_fiber_tramp
)");
#endif
#endif

void fiber_main(Thread* t);

#ifdef MSLEMU_UCONTEXT
void fiber_uc_entry(unsigned hi, unsigned lo) {
  fiber_main((Thread*)(((uintptr_t)hi << 32) | (uintptr_t)lo));
}
#endif

// The stacks are kRegion-aligned, so their tops would all fall into the same cache sets;
// each thread starts its stack a little lower (by cache lines and pages) to spread them.
inline uintptr_t color(const Thread* t) {
  unsigned i = (unsigned)t->index;
  return 64 + (i % 64) * 64 + ((i / 64) % 8) * 4096;
}

void fiber_init(Thread* t) {
#ifdef MSLEMU_UCONTEXT
  getcontext(&t->uc);
  t->uc.uc_stack.ss_sp = t->stack_lo;
  t->uc.uc_stack.ss_size = (size_t)(t->stack_hi - color(t) - t->stack_lo);
  t->uc.uc_link = nullptr;
  uintptr_t p = (uintptr_t)t;
  makecontext(&t->uc, (void (*)())fiber_uc_entry, 2, (unsigned)(p >> 32), (unsigned)(p & 0xffffffffu));
#elif defined(__x86_64__)
  uintptr_t top = ((uintptr_t)t->stack_hi - color(t)) & ~(uintptr_t)15;
  uint64_t* sp = (uint64_t*)(top - 56);
  // layout popped by mslemu_swap: r15 r14 r13 r12 rbx rbp, then the return address
  sp[0] = 0;                              // r15
  sp[1] = 0;                              // r14
  sp[2] = (uint64_t)&fiber_main;          // r13: the function
  sp[3] = (uint64_t)t;                    // r12: its argument
  sp[4] = 0;                              // rbx
  sp[5] = 0;                              // rbp
  sp[6] = (uint64_t)&mslemu_fiber_tramp;  // return address
  t->sp = sp;
#elif defined(__aarch64__)
  uintptr_t top = ((uintptr_t)t->stack_hi - color(t)) & ~(uintptr_t)15;
  uint64_t* sp = (uint64_t*)(top - 160);
  memset(sp, 0, 160);
  sp[0] = (uint64_t)t;                     // x19: argument
  sp[1] = (uint64_t)&fiber_main;           // x20: function
  sp[11] = (uint64_t)&mslemu_fiber_tramp;  // x30
  t->sp = sp;
#endif
  *(Thread**)(t->stack_hi - sizeof(void*)) = t;
}

inline void switch_to_fiber(Worker* w, Thread* t) {
#ifdef MSLEMU_UCONTEXT
  swapcontext(&w->sched_uc, &t->uc);
#else
  mslemu_swap(&w->sched_sp, t->sp);
#endif
}
inline void switch_to_sched(Worker* w, Thread* t) {
#ifdef MSLEMU_UCONTEXT
  swapcontext(&t->uc, &w->sched_uc);
#else
  mslemu_swap(&t->sp, w->sched_sp);
#endif
}
inline void switch_between(Thread* from, Thread* to) {
#ifdef MSLEMU_UCONTEXT
  swapcontext(&from->uc, &to->uc);
#else
  mslemu_swap(&from->sp, to->sp);
#endif
}

// The next runnable thread of this pass, in the pass's order.
inline Thread* next_runnable(Worker* w) {
  while (w->pos < w->nthreads) {
    Thread* t = &w->th[w->order[w->pos++]];
    if (t->state == RUNNABLE) return t;
  }
  return nullptr;
}

// Called on fiber t after it set its state (blocked or done): runs the next runnable
// thread of the pass directly, or returns to the scheduler when the pass is over. Returns
// when t is resumed.
inline void block(Worker* w, Thread* t) {
  Thread* n = next_runnable(w);
  if (n) {
    w->cur = n;
    switch_between(t, n);
  } else {
    switch_to_sched(w, t);
  }
}

void fiber_main(Thread* t) {
  Worker* w = t->worker;
  w->entry();
  t->state = DONE;
  block(w, t);
  __builtin_trap();
}

// ---------------------------------------------------------------------------------------
// Workers

Worker* get_worker(int64_t slot) {
  if (slot < 0 || slot >= kMaxSlots) return nullptr;
  pthread_mutex_lock(&g_mu);
  Worker* w = g_workers[slot];
  if (!w) {
    void* m = mmap(nullptr, sizeof(Worker), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      w = (Worker*)m;
      if (!g_page) g_page = (size_t)sysconf(_SC_PAGESIZE);
      size_t tgsize = (kTgMapped + g_page - 1) / g_page * g_page;
      char* tg = (char*)mmap(nullptr, tgsize + g_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (tg == MAP_FAILED) {
        munmap(m, sizeof(Worker));
        w = nullptr;
      } else {
        mprotect(tg + tgsize, g_page, PROT_NONE);
        w->tg_map = tg;
        w->tg_mem = tg + tgsize - kTgMapped;
        w->tg_dirty = kTgMapped;
        w->slot = (int)slot;
        g_workers[slot] = w;
      }
    }
  }
  pthread_mutex_unlock(&g_mu);
  return w;
}

bool ensure_stacks(Worker* w, int n) {
  while (w->nstacks < n) {
    Thread* t = &w->th[w->nstacks];
    // a kRegion-aligned region: map twice the size and trim
    char* raw = (char*)mmap(nullptr, 2 * kRegion, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return false;
    char* m = (char*)(((uintptr_t)raw + kRegion - 1) & ~(uintptr_t)(kRegion - 1));
    if (m > raw) munmap(raw, (size_t)(m - raw));
    if (raw + 2 * kRegion > m + kRegion) munmap(m + kRegion, (size_t)(raw + 2 * kRegion - (m + kRegion)));
    if (mprotect(m + kStackGuard, kStackSize, PROT_READ | PROT_WRITE) != 0) {
      munmap(m, kRegion);
      return false;
    }
    t->worker = w;
    t->map = m;
    t->stack_lo = m + kStackGuard;
    t->stack_hi = m + kStackGuard + kStackSize;
    w->nstacks++;
  }
  return true;
}

uint64_t splitmix(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// ---------------------------------------------------------------------------------------
// Signals
//
// Every kernel library carries its own copy of this runtime, but a process has one
// handler per signal. So the state the handler needs lives in one block of memory that
// the Go side allocates once per process and hands to every library (mslemu_init): the
// handlers of all the libraries loaded, the handler the first one replaced (the Go
// runtime's), and the runs in progress per worker slot. Whichever library's handler is
// installed serves a fault in any library's kernel; a fault on a thread with no run in
// progress goes to the old handler. A handler of any of the libraries counts as ours, so
// that one library never takes another's for a foreign handler to chain to (A, then B,
// then A again would chain A's handler to itself, and a fault outside the kernels, a Go
// nil dereference, would loop in it forever).

struct Run {
  pthread_t tid;
  sigjmp_buf* jb;
  mslemu_launch* L;
  volatile int active;
};
constexpr int kMaxLibraries = 4096;
struct Shared {
  uint64_t magic;
  volatile int lock;
  int nours;
  void* ours[kMaxLibraries];  // the on_fault of every library loaded
  struct sigaction old[65];
  Run runs[kMaxSlots];
};
constexpr uint64_t kSharedMagic = 0x6d736c656d750002ull;
Shared* g_shared;

const int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};

void on_fault(int sig, siginfo_t* si, void* uc) {
  Shared* S = g_shared;
  pthread_t self = pthread_self();
  for (int i = 0; i < kMaxSlots; i++) {
    Run* r = &S->runs[i];
    if (r->active && pthread_equal(r->tid, self)) {
      r->active = 0;
      r->L->fault_sig = sig;
      r->L->fault_addr = (uint64_t)(uintptr_t)si->si_addr;
      siglongjmp(*r->jb, 1);
    }
  }
  struct sigaction* o = &S->old[sig];
  if (o->sa_flags & SA_SIGINFO) {
    if (o->sa_sigaction) {
      o->sa_sigaction(sig, si, uc);
      return;
    }
  }
  if (o->sa_handler == SIG_IGN) return;
  if (o->sa_handler == SIG_DFL || o->sa_handler == nullptr) {
    signal(sig, SIG_DFL);  // the faulting instruction runs again and takes the default action
    return;
  }
  o->sa_handler(sig);
}

void ensure_handlers() {
  Shared* S = g_shared;
  while (__atomic_exchange_n(&S->lock, 1, __ATOMIC_ACQUIRE)) {
  }
  for (int sig : kSignals) {
    struct sigaction cur;
    if (sigaction(sig, nullptr, &cur) != 0) continue;
    bool ours = false;
    for (int i = 0; (cur.sa_flags & SA_SIGINFO) && i < S->nours; i++)
      if ((void*)cur.sa_sigaction == S->ours[i]) ours = true;
    if (ours) continue;
    // first time, or someone (the Go runtime) replaced ours: chain to what is there now
    S->old[sig] = cur;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
  __atomic_store_n(&S->lock, 0, __ATOMIC_RELEASE);
}

// ---------------------------------------------------------------------------------------
// Scheduling

int site_cmp(const Thread* a, const Thread* b) {
  if (a->file != b->file) {
    int c = strcmp(a->file ? a->file : "", b->file ? b->file : "");
    if (c) return c;
  }
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  if (a->col != b->col) return a->col < b->col ? -1 : 1;
  return 0;
}

// Resolves the collectives of every SIMD group whose lanes wait at one; returns whether
// any lanes were released.
bool resolve_collectives(Worker* w) {
  int n = w->nthreads;
  bool released = false;
  for (int base = 0; base < n; base += MSLEMU_SIMD_WIDTH) {
    int end = base + MSLEMU_SIMD_WIDTH < n ? base + MSLEMU_SIMD_WIDTH : n;
    Thread* first = nullptr;
    for (int i = base; i < end; i++) {
      Thread* t = &w->th[i];
      if (t->state != AT_COLL) continue;
      if (!first || site_cmp(t, first) < 0 || (site_cmp(t, first) == 0 && (uintptr_t)t->fn < (uintptr_t)first->fn))
        first = t;
    }
    if (!first) continue;
    mslemu_group g;
    memset(&g, 0, sizeof g);
    g.exist = (end - base) >= 32 ? 0xffffffffu : ((1u << (end - base)) - 1u);
    for (int i = base; i < end; i++) {
      Thread* t = &w->th[i];
      if (t->state == AT_COLL && site_cmp(t, first) == 0 && t->fn == first->fn) {
        g.mask |= 1u << (i - base);
        g.lane[i - base] = t->lane;
      }
    }
    first->fn(&g);
    for (int i = base; i < end; i++)
      if (g.mask >> (i - base) & 1) w->th[i].state = RUNNABLE;
    released = true;
  }
  return released;
}

// Writes "a..b, c" for the threads in state st (at the site of ref when given).
void list_threads(Worker* w, int st, const Thread* ref, char* buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  int n = w->nthreads, shown = 0;
  for (int i = 0; i < n;) {
    auto match = [&](int k) {
      const Thread* t = &w->th[k];
      return t->state == st && (!ref || site_cmp(t, ref) == 0);
    };
    if (!match(i)) {
      i++;
      continue;
    }
    int j = i;
    while (j + 1 < n && match(j + 1)) j++;
    if (shown == 6) {
      snprintf(buf + len, cap - len, ", ...");
      return;
    }
    int k = (j == i) ? snprintf(buf + len, cap - len, "%s%d", shown ? ", " : "", i)
                     : snprintf(buf + len, cap - len, "%s%d..%d", shown ? ", " : "", i, j);
    if (k < 0 || (size_t)k >= cap - len) return;
    len += (size_t)k;
    shown++;
    i = j + 1;
  }
}

// Returns 0 when every thread is done, -1 on error (message in L->err), 1 to go on.
int resolve_barrier(Worker* w) {
  mslemu_launch* L = w->L;
  int n = w->nthreads, nbar = 0, ndone = 0;
  Thread* ref = nullptr;
  for (int i = 0; i < n; i++) {
    Thread* t = &w->th[i];
    if (t->state == DONE) ndone++;
    else if (t->state == AT_BARRIER) {
      nbar++;
      if (!ref) ref = t;
    }
  }
  if (ndone == n) return 0;
  if (nbar + ndone != n || !ref) {
    errf(L, "internal error: %d threads neither at a barrier nor done", n - nbar - ndone);
    return -1;
  }
  char buf[256];
  bool same = true;
  for (int i = 0; i < n; i++) {
    Thread* t = &w->th[i];
    if (t->state == AT_BARRIER && site_cmp(t, ref) != 0) same = false;
  }
  if (!same) {
    errf(L, "deadlock: the threads wait at different threadgroup_barrier calls:");
    for (int i = 0; i < n; i++) {
      Thread* t = &w->th[i];
      if (t->state != AT_BARRIER) continue;
      bool seen = false;
      for (int k = 0; k < i; k++)
        if (w->th[k].state == AT_BARRIER && site_cmp(&w->th[k], t) == 0) seen = true;
      if (seen) continue;
      list_threads(w, AT_BARRIER, t, buf, sizeof buf);
      errappend(L, " %s:%u (threads %s);", t->file, t->line, buf);
    }
    if (ndone) {
      list_threads(w, DONE, nullptr, buf, sizeof buf);
      errappend(L, " returned: threads %s", buf);
    }
    return -1;
  }
  if (ndone && !(L->flags & 1)) {
    list_threads(w, DONE, nullptr, buf, sizeof buf);
    errf(L,
         "deadlock: threadgroup_barrier at %s:%u is reached by %d of %d threads; threads %s returned "
         "without reaching it (on a GPU the barrier waits for them forever)",
         ref->file, ref->line, nbar, n, buf);
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (w->th[i].state == AT_BARRIER) w->th[i].state = RUNNABLE;
  return 1;
}

void make_order(Worker* w) {
  int n = w->nthreads;
  int64_t mode = w->L->order;
  for (int i = 0; i < n; i++) w->order[i] = mode == 1 ? n - 1 - i : i;
  if (mode == 2) {
    for (int i = n - 1; i > 0; i--) {
      int j = (int)(splitmix(&w->rng) % (uint64_t)(i + 1));
      int tmp = w->order[i];
      w->order[i] = w->order[j];
      w->order[j] = tmp;
    }
  }
}

int run_group(Worker* w, int64_t gx, int64_t gy, int64_t gz, uint64_t glinear) {
  mslemu_launch* L = w->L;
  int64_t tx = L->tptg[0], ty = L->tptg[1], tz = L->tptg[2];
  int n = (int)(tx * ty * tz);
  w->nthreads = n;
  w->group[0] = gx;
  w->group[1] = gy;
  w->group[2] = gz;
  w->rng = L->seed ^ (glinear * 0xd1342543de82ef95ull);
  // threadgroup memory: poison what the last threadgroup used, lay out the dynamic part
  if (w->tg_dirty) memset(w->tg_mem, 0xff, w->tg_dirty);
  w->tg_used = 0;
  w->tg_acct = 0;
  w->tg_dirty = 0;
  w->nstatics = 0;
  for (int i = 0; i < MSLEMU_MAX_BINDINGS; i++) {
    w->tg_args[i] = nullptr;
    if (L->tg_len[i]) {
      w->tg_args[i] = w->tg_mem + w->tg_used;
      w->tg_used += (L->tg_len[i] + 15) & ~(uint64_t)15;
    }
  }
  w->tg_acct = w->tg_used;
  w->tg_dirty = w->tg_used;
  for (int i = 0; i < n; i++) {
    Thread* t = &w->th[i];
    t->state = RUNNABLE;
    mslemu_thread_info* in = &t->info;  // the per-launch fields are set by init_threads
    in->tgpig[0] = (uint32_t)gx;
    in->tgpig[1] = (uint32_t)gy;
    in->tgpig[2] = (uint32_t)gz;
    for (int d = 0; d < 3; d++) in->tpig[d] = in->tgpig[d] * in->tptg[d] + in->tpitg[d];
    fiber_init(t);
  }
  for (;;) {
    make_order(w);
    w->pos = 0;
    Thread* first = next_runnable(w);
    if (first) {
      w->cur = first;
      switch_to_fiber(w, first);  // returns when every thread is blocked or done
      Thread* t = w->cur;
      w->cur = nullptr;
      if (w->failed) {
        L->fail_thread[0] = t->info.tpitg[0];
        L->fail_thread[1] = t->info.tpitg[1];
        L->fail_thread[2] = t->info.tpitg[2];
        return -1;
      }
    }
    if (resolve_collectives(w)) continue;
    int r = resolve_barrier(w);
    if (r <= 0) return r;
  }
}

// Sets the builtins that are the same in every threadgroup of the launch.
void init_threads(Worker* w) {
  mslemu_launch* L = w->L;
  int64_t tx = L->tptg[0], ty = L->tptg[1], tz = L->tptg[2];
  int n = (int)(tx * ty * tz);
  uint32_t sg = (uint32_t)((n + MSLEMU_SIMD_WIDTH - 1) / MSLEMU_SIMD_WIDTH);
  for (int i = 0; i < n; i++) {
    Thread* t = &w->th[i];
    t->index = i;
    mslemu_thread_info* in = &t->info;
    in->tpitg[0] = (uint32_t)(i % tx);
    in->tpitg[1] = (uint32_t)((i / tx) % ty);
    in->tpitg[2] = (uint32_t)(i / (tx * ty));
    for (int d = 0; d < 3; d++) {
      in->tptg[d] = (uint32_t)L->tptg[d];
      in->tgpg[d] = (uint32_t)L->grid[d];
      in->tpg[d] = (uint32_t)(L->grid[d] * L->tptg[d]);
    }
    in->tiitg = (uint32_t)i;
    in->tiisg = (uint32_t)i % MSLEMU_SIMD_WIDTH;
    in->sgitg = (uint32_t)i / MSLEMU_SIMD_WIDTH;
    in->sgptg = sg;
    in->width = MSLEMU_SIMD_WIDTH;
  }
}

int run_all(Worker* w) {
  mslemu_launch* L = w->L;
  init_threads(w);
  uint64_t gx = (uint64_t)L->grid[0], gy = (uint64_t)L->grid[1], gz = (uint64_t)L->grid[2];
  uint64_t total = gx * gy * gz;
  uint32_t* perm = nullptr;
  if (L->order == 2 && total > 1) {
    perm = (uint32_t*)malloc(total * sizeof(uint32_t));
    if (!perm) {
      errf(L, "out of memory for the threadgroup order");
      return -1;
    }
    for (uint64_t i = 0; i < total; i++) perm[i] = (uint32_t)i;
    uint64_t s = L->seed ^ 0x5851f42d4c957f2dull;
    for (uint64_t i = total - 1; i > 0; i--) {
      uint64_t j = splitmix(&s) % (i + 1);
      uint32_t tmp = perm[i];
      perm[i] = perm[j];
      perm[j] = tmp;
    }
  }
  int rc = 0;
  for (uint64_t p = (uint64_t)L->worker_index; p < total; p += (uint64_t)L->worker_count) {
    uint64_t g = L->order == 1 ? total - 1 - p : (perm ? perm[p] : p);
    int64_t x = (int64_t)(g % gx), y = (int64_t)((g / gx) % gy), z = (int64_t)(g / (gx * gy));
    L->fail_group[0] = x;
    L->fail_group[1] = y;
    L->fail_group[2] = z;
    L->fail_thread[0] = L->fail_thread[1] = L->fail_thread[2] = -1;
    rc = run_group(w, x, y, z, g);
    if (rc < 0) break;
    L->groups_run++;
  }
  free(perm);
  return rc;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Services for kernel code

extern "C" {

const mslemu_thread_info* mslemu_cur_info(void) { return &cur_thread()->info; }

void* mslemu_buffer_ptr(int index) {
  Worker* w = cur_thread()->worker;
  if (index < 0 || index >= MSLEMU_MAX_BINDINGS) mslemu_fail("buffer index out of range");
  return (void*)(uintptr_t)w->L->buf_ptr[index];
}

void* mslemu_tg_arg_ptr(int index) {
  Worker* w = cur_thread()->worker;
  if (index < 0 || index >= MSLEMU_MAX_BINDINGS || !w->tg_args[index]) mslemu_fail("threadgroup argument not bound");
  return w->tg_args[index];
}

void* mslemu_tg_static(const void* key, uint64_t size, uint64_t align) {
  Worker* w = cur_thread()->worker;
  for (int i = 0; i < w->nstatics; i++)
    if (w->statics[i].key == key) return w->statics[i].ptr;
  if (w->nstatics == kMaxStatics) mslemu_fail("too many threadgroup variables");
  if (align == 0 || (align & (align - 1))) mslemu_fail("threadgroup variable of a bad alignment");
  // Metal counts each variable from a 16-byte boundary (the linter's model, lint.go).
  size_t acct = ((w->tg_acct + 15) & ~(size_t)15) + size;
  if (acct > MSLEMU_MAX_TG_MEMORY) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "threadgroup memory exceeds Metal's limit: %llu bytes of threadgroup variables on top of %llu bytes in use "
             "(limit %d)",
             (unsigned long long)size, (unsigned long long)w->tg_acct, MSLEMU_MAX_TG_MEMORY);
    mslemu_fail(msg);
  }
  // The variable's own alignment, as Apple's compiler gives it (the GPU may place it at
  // any multiple of that): a kernel must not rely on more.
  size_t off = (w->tg_used + align - 1) & ~(size_t)(align - 1);
#ifdef MSLEMU_STRICT_ALIGN
  if (align < 16) off = ((w->tg_used + 2 * align - 1) & ~(size_t)(2 * align - 1)) + align;
#endif
  if (off + size > kTgMapped) mslemu_fail("internal error: threadgroup variables past the mapped memory");
  void* p = w->tg_mem + off;
  w->tg_acct = acct;
  w->tg_used = off + size;
  if (w->tg_used > w->tg_dirty) w->tg_dirty = w->tg_used;
  w->statics[w->nstatics].key = key;
  w->statics[w->nstatics].ptr = p;
  w->statics[w->nstatics].size = size;
  w->nstatics++;
  return p;
}

void mslemu_barrier(int flags, const char* file, unsigned line, unsigned col) {
  (void)flags;
  Thread* t = cur_thread();
  Worker* w = t->worker;
  t->state = AT_BARRIER;
  t->file = file;
  t->line = line;
  t->col = col;
  block(w, t);
}

void mslemu_collective(mslemu_lane* me, mslemu_combine_fn fn, const char* file, unsigned line, unsigned col) {
  Thread* t = cur_thread();
  Worker* w = t->worker;
  t->state = AT_COLL;
  t->lane = me;
  t->fn = fn;
  t->file = file;
  t->line = line;
  t->col = col;
  block(w, t);
}

void mslemu_fail(const char* msg) {
  Thread* t = cur_thread();
  Worker* w = t->worker;
  errf(w->L, "%s", msg);
  w->failed = 1;
  switch_to_sched(w, t);
  __builtin_trap();
}

#ifdef MSLEMU_STRICT_ALIGN
// The alignment sanitizer's report (clang -fsanitize=alignment
// -fno-sanitize-recover=alignment, the strict mode's flags): clang calls this, in place of
// its runtime library's, when a load, store, member access or reference binding uses an
// address not aligned for its type. The layout of the data is compiler-rt's
// TypeMismatchData (ubsan_handlers.h), stable since clang 5.
struct ubsan_loc {
  const char* file;
  uint32_t line, col;
};
struct ubsan_type {
  uint16_t kind, info;
  char name[1];
};
struct ubsan_mismatch {
  ubsan_loc loc;
  const ubsan_type* type;
  unsigned char log_align;
  unsigned char check;
};

// The Thread of the fiber the caller runs on, or null off the fibers (found from the
// stack pointer among the workers' current threads, without trusting the region's last
// word, which off a fiber is someone else's memory).
static Thread* fiber_or_null() {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  for (int i = 0; i < kMaxSlots; i++) {
    Worker* w = __atomic_load_n(&g_workers[i], __ATOMIC_ACQUIRE);
    if (!w) continue;
    Thread* t = w->cur;
    if (t && sp >= (uintptr_t)t->stack_lo && sp < (uintptr_t)t->stack_hi) return t;
  }
  return nullptr;
}

MSLEMU_HIDDEN __attribute__((noreturn)) void __ubsan_handle_type_mismatch_v1_abort(ubsan_mismatch* d, uintptr_t p);
MSLEMU_HIDDEN __attribute__((noreturn)) void __ubsan_handle_type_mismatch_v1(ubsan_mismatch* d, uintptr_t p);

void __ubsan_handle_type_mismatch_v1_abort(ubsan_mismatch* d, uintptr_t p) {
  static const char* const kinds[] = {"load from", "store to", "reference to", "member access in",
                                      "assignment to or method call on", "construction at"};
  const char* what = d->check < sizeof kinds / sizeof kinds[0] ? kinds[d->check] : "use of";
  uint64_t align = (uint64_t)1 << d->log_align;
  char where[160] = "";
  Thread* t = fiber_or_null();
  if (t) {
    Worker* w = t->worker;
    if (p >= (uintptr_t)w->tg_mem && p < (uintptr_t)w->tg_mem + kTgMapped) {
      snprintf(where, sizeof where, " (threadgroup memory)");
      for (int i = 0; i < w->nstatics; i++) {
        Static* s = &w->statics[i];
        if (p >= (uintptr_t)s->ptr && p < (uintptr_t)s->ptr + s->size)
          snprintf(where, sizeof where, " (threadgroup variable %s + %llu bytes)", (const char*)s->key,
                   (unsigned long long)(p - (uintptr_t)s->ptr));
      }
    } else {
      for (int i = 0; i < MSLEMU_MAX_BINDINGS; i++) {
        uintptr_t b = (uintptr_t)w->L->buf_ptr[i];
        if (b && p >= b && p < b + w->L->buf_len[i])
          snprintf(where, sizeof where, " (buffer(%d) + %llu bytes)", i, (unsigned long long)(p - b));
      }
    }
  }
  char msg[512];
  snprintf(msg, sizeof msg, "misaligned %s address %#llx%s of type %s, which needs %llu-byte alignment, at %s:%u:%u",
           what, (unsigned long long)p, where, d->type ? d->type->name : "?", (unsigned long long)align,
           d->loc.file ? d->loc.file : "?", d->loc.line, d->loc.col);
  if (!t) {
    fprintf(stderr, "mslemu: %s (outside kernel code)\n", msg);
    abort();
  }
  mslemu_fail(msg);
}
void __ubsan_handle_type_mismatch_v1(ubsan_mismatch* d, uintptr_t p) { __ubsan_handle_type_mismatch_v1_abort(d, p); }
#endif

int64_t mslemu_abi_version(void) { return MSLEMU_ABI_VERSION; }

int64_t mslemu_shared_size(void) { return (int64_t)sizeof(Shared); }

int64_t mslemu_launch_size(void) { return (int64_t)sizeof(mslemu_launch); }

// mslemu_init hands the library the process-wide block (zeroed memory of
// mslemu_shared_size bytes, the same for every library of the process).
int64_t mslemu_init(void* shared) {
  Shared* S = (Shared*)shared;
  if (S->magic == 0) S->magic = kSharedMagic;
  if (S->magic != kSharedMagic) return -1;
  while (__atomic_exchange_n(&S->lock, 1, __ATOMIC_ACQUIRE)) {
  }
  bool known = false;
  for (int i = 0; i < S->nours; i++)
    if (S->ours[i] == (void*)on_fault) known = true;
  int64_t rc = 0;
  if (!known) {
    if (S->nours < kMaxLibraries) S->ours[S->nours++] = (void*)on_fault;
    else rc = -1;
  }
  __atomic_store_n(&S->lock, 0, __ATOMIC_RELEASE);
  if (rc == 0) g_shared = S;
  return rc;
}

static int64_t run_protected(Worker* w) __attribute__((noinline));
static int64_t run_protected(Worker* w) {
  if (sigsetjmp(w->jb, 1)) {
    g_shared->runs[w->slot].active = 0;
    mslemu_launch* L = w->L;
    Thread* t = w->cur;
    w->cur = nullptr;
    uintptr_t a = (uintptr_t)L->fault_addr;
    const char* what = "fault";
    switch (L->fault_sig) {
      case SIGSEGV: what = "SIGSEGV (invalid memory access)"; break;
      case SIGBUS: what = "SIGBUS (invalid memory access)"; break;
      case SIGFPE: what = "SIGFPE (integer division by zero or overflow)"; break;
      case SIGILL: what = "SIGILL (illegal instruction)"; break;
    }
    errf(L, "kernel fault: %s at address %#llx", what, (unsigned long long)a);
    if (t) {
      L->fail_thread[0] = t->info.tpitg[0];
      L->fail_thread[1] = t->info.tpitg[1];
      L->fail_thread[2] = t->info.tpitg[2];
      if (a >= (uintptr_t)t->map && a < (uintptr_t)t->stack_lo + 4096)
        errappend(L, ": stack overflow (the thread's stack is %zu KiB)", kStackSize / 1024);
    } else {
      errappend(L, " outside kernel code");
    }
    if (a >= (uintptr_t)w->tg_mem + kTgMapped && a < (uintptr_t)w->tg_mem + kTgMapped + g_page)
      errappend(L, ": past the end of threadgroup memory");
    return -2;
  }
  Run* r = &g_shared->runs[w->slot];
  r->tid = pthread_self();
  r->jb = &w->jb;
  r->L = w->L;
  __atomic_store_n(&r->active, 1, __ATOMIC_SEQ_CST);
  int64_t rc = run_all(w);
  __atomic_store_n(&r->active, 0, __ATOMIC_SEQ_CST);
  return rc;
}

int64_t mslemu_run(mslemu_launch* L) {
  L->err[0] = 0;
  L->fault_sig = 0;
  L->fault_addr = 0;
  L->groups_run = 0;
  L->fail_thread[0] = L->fail_thread[1] = L->fail_thread[2] = -1;
  if (!g_page) g_page = (size_t)sysconf(_SC_PAGESIZE);
  int64_t n = L->tptg[0] * L->tptg[1] * L->tptg[2];
  if (n <= 0 || n > kMaxThreads) {
    errf(L, "threads per threadgroup %lld out of range (1..%d)", (long long)n, kMaxThreads);
    return -1;
  }
  if (L->worker_count <= 0 || L->worker_index < 0 || L->worker_index >= L->worker_count) {
    errf(L, "bad worker split");
    return -1;
  }
  Worker* w = get_worker(L->slot);
  if (!w) {
    errf(L, "cannot create worker slot %lld", (long long)L->slot);
    return -1;
  }
  if (!ensure_stacks(w, (int)n)) {
    errf(L, "cannot map fiber stacks");
    return -1;
  }
  if (!g_shared) {
    errf(L, "runtime not initialised (mslemu_init)");
    return -1;
  }
  ensure_handlers();
  w->L = L;
  w->entry = (void (*)(void))(uintptr_t)L->entry;
  w->failed = 0;
  w->cur = nullptr;
  int64_t rc = run_protected(w);
  w->L = nullptr;
  return rc;
}

}  // extern "C"
