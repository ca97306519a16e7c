/* oltptrace: a valgrind tool that streams a compact instruction and data trace
   (the oltpscope trace stream, version 1: docs/design/trace-format.md) to the
   file or FIFO named by --trace-out.

   Owns: instrumentation of superblocks into IFETCH-per-run and LOAD/STORE/MODIFY
   records, the output buffer, MARKER records from the probe crate's client requests,
   THREAD and MAP records, and the END record.
   Must never: write anything but MAP and THREAD records outside
   TRACE_START..TRACE_STOP, change the client's behaviour, or block the client other
   than by writing the stream (a slow reader slows the client; it never loses data).

   Speed: translations are only instrumented while tracing; TRACE_START and
   TRACE_STOP discard all translations so that untraced phases run at the speed of
   --tool=none.  Each run of instructions costs one helper call that writes the
   IFETCH word and up to five data words (more data accesses -> more calls), or the
   same records written by generated IR (--inline-records=yes, the default). */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_options.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_transtab.h"
#include "pub_tool_deduppoolalloc.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"
#include "valgrind.h"

/* Not in the tool headers, but exported by libcoregrind: moves a file descriptor
   into valgrind's reserved range (invisible to the client, close-on-exec). */
extern Int VG_(safe_fd)(Int oldfd);
extern Int VG_(fcntl)(Int fd, Int cmd, Addr arg);

/*------------------------------------------------------------*/
/*--- The stream format (docs/design/trace-format.md)      ---*/
/*------------------------------------------------------------*/

#define K_IFETCH 0ULL
#define K_LOAD 1ULL
#define K_STORE 2ULL
#define K_MODIFY 3ULL
#define K_MARKER 4ULL
#define K_THREAD 5ULL
#define K_MAP 6ULL
#define K_END 7ULL

#define ADDR_MASK ((1ULL << 48) - 1)
#define MAX_ACCESS_SIZE 4095 /* size field is 12 bits */
#define SPLIT_CHUNK 2048     /* larger accesses are split into chunks of this size */
#define RUN_BLOCK 32         /* a run's instructions start in one aligned 32-byte block */
#define MAX_INSTR_LEN 15     /* longest x86 instruction; a run's len <= 31 + 15 = 46 */
#define MAX_RUN_LEN 46

/* Client requests of the probe crate: tool base ('O','S'), codes 1..9. */
#define CR_OP_BEGIN 1
#define CR_OP_END 2
#define CR_TXN_BEGIN 3
#define CR_TXN_END 4
#define CR_TRACE_START 5
#define CR_TRACE_STOP 6
#define CR_THREAD_ROLE 7
#define CR_CTX_POINT 8 /* a STEPS candidate CTX point (autoSTEPS) */
#define CR_CONTEXT 9   /* the thread now runs this coroutine context (0: its own stack) */
#define CR_BTREE_LEVEL 10 /* a B+tree descent reaches a node of this level */

/*------------------------------------------------------------*/
/*--- Options                                              ---*/
/*------------------------------------------------------------*/

static const HChar* clo_trace_out = "oltptrace.%p.trace";
static Bool clo_trace_start = False;
static Bool clo_inline = True; /* records written by generated IR, not helper calls */
/* Forked children keep tracing into the same stream, each process's records in frames
   of its own (see "Forked processes" in docs/design/tracer.md). */
static Bool clo_follow_forks = False;
/* Function names (exact symbol names): a process starts tracing when it enters
   clo_start_at; every entry of clo_txn_end_at while tracing writes a TXN_END marker. */
static const HChar* clo_start_at = NULL;
static const HChar* clo_txn_end_at = NULL;
static const HChar* clo_stop_at = NULL; /* a process stops tracing when it enters this */

static Bool ot_process_cmd_line_option(const HChar* arg)
{
   if VG_STR_CLO (arg, "--trace-out", clo_trace_out) {
   } else if VG_BOOL_CLO (arg, "--trace-start", clo_trace_start) {
   } else if VG_BOOL_CLO (arg, "--inline-records", clo_inline) {
   } else if VG_BOOL_CLO (arg, "--follow-forks", clo_follow_forks) {
   } else if VG_STR_CLO (arg, "--trace-start-at", clo_start_at) {
   } else if VG_STR_CLO (arg, "--txn-end-at", clo_txn_end_at) {
   } else if VG_STR_CLO (arg, "--trace-stop-at", clo_stop_at) {
   } else
      return False;
   return True;
}

static void ot_print_usage(void)
{
   VG_(printf)(
      "    --trace-out=<file>        write the trace stream to <file> (a file or FIFO;\n"
      "                              %%p is the pid) [oltptrace.%%p.trace]\n"
      "    --trace-start=no|yes      trace from the start, not from the first\n"
      "                              TRACE_START client request [no]\n"
      "    --inline-records=yes|no   write records with generated code (yes) or\n"
      "                              with one helper call per record group [yes]\n"
      "    --follow-forks=no|yes     forked children trace into the same stream, in\n"
      "                              frames of (pid, bytes) [no]\n"
      "    --trace-start-at=<fn>     a process starts tracing when it enters <fn>\n"
      "    --txn-end-at=<fn>         each entry of <fn> while tracing is a TXN_END\n"
      "    --trace-stop-at=<fn>      a process stops tracing when it enters <fn>\n");
}

static void ot_print_debug_usage(void) { VG_(printf)("    (none)\n"); }

/*------------------------------------------------------------*/
/*--- Output buffer                                        ---*/
/*------------------------------------------------------------*/

/* Limits: the buffer holds BUF_WORDS words; a helper call writes at most
   MAX_CALL_WORDS words, so a helper only checks for room once. */
#define BUF_WORDS (512 * 1024) /* 4 MiB */
#define MAX_CALL_WORDS 8

static ULong* buf;       /* BUF_WORDS words */
static ULong* buf_pos;   /* next free word */
static ULong* buf_limit; /* buf + BUF_WORDS - MAX_CALL_WORDS: a call must start below */
static Int out_fd = -1;  /* -1: no stream (before init, or in a forked child) */

static Bool tracing = False; /* recording instructions, accesses and markers */
static ULong n_instr_traced = 0;
static ThreadId written_tid = VG_INVALID_THREADID; /* tid of the last THREAD record */
static ULong n_bytes_written = 0;

static void write_raw(const void* data, SizeT len);

/* --follow-forks: every process writes its records in frames of at most PIPE_BUF
   (4096) bytes, a header word (pid << 32 | payload bytes) and the payload, so the
   kernel never interleaves two processes' frames in the pipe. */
#define FRAME_BYTES 4096
static Int my_pid = 0;

static void write_all(const void* data, SizeT len)
{
   if (!clo_follow_forks) {
      write_raw(data, len);
      return;
   }
   static ULong frame[FRAME_BYTES / 8];
   const UChar* p = data;
   while (len > 0) {
      SizeT n = len > FRAME_BYTES - 8 ? FRAME_BYTES - 8 : len;
      frame[0] = ((ULong)(UInt)my_pid << 32) | (ULong)n;
      VG_(memcpy)(&frame[1], p, n);
      write_raw(frame, n + 8);
      p += n;
      len -= n;
   }
}

static void write_raw(const void* data, SizeT len)
{
   const UChar* p = data;
   while (len > 0) {
      Int chunk = len > (1 << 30) ? (1 << 30) : (Int)len;
      Int r = VG_(write)(out_fd, p, chunk);
      if (r == -VKI_EINTR)
         continue;
      if (r <= 0) {
         /* The reader is gone or the disk is full: the trace cannot be completed,
            and a silently truncated trace would be wrong data. */
         VG_(umsg)("oltptrace: writing the trace to '%s' failed (error %d); stopping\n",
                   clo_trace_out, -r);
         VG_(exit)(2);
      }
      p += r;
      len -= r;
      n_bytes_written += r;
   }
}

static void flush_buffer(void)
{
   if (out_fd < 0) {
      buf_pos = buf;
      return;
   }
   if (buf_pos > buf)
      write_all(buf, (SizeT)(buf_pos - buf) * sizeof(ULong));
   buf_pos = buf;
}

/* Room for n more words (n <= MAX_CALL_WORDS); returns the write position. */
static inline ULong* room(void)
{
   if (UNLIKELY(buf_pos > buf_limit))
      flush_buffer();
   return buf_pos;
}

static void put_word(ULong w)
{
   ULong* p = room();
   *p = w;
   buf_pos = p + 1;
}

/* Thread roles (probe::Role; 0 = none declared), per valgrind ThreadId. A role is
   declared once, usually before tracing starts, so the tool remembers it and writes it
   as a THREAD_ROLE marker right after the thread's next THREAD record. Valgrind reuses
   ThreadIds: a new thread starts without a role, and that too is written. */
static UInt* thread_role;   /* VG_N_THREADS entries */
static Bool* role_pending;  /* role changed since last written to the stream */

static void put_role(ThreadId tid)
{
   if (tid < VG_N_THREADS && role_pending[tid]) {
      role_pending[tid] = False;
      put_word((K_MARKER << 60) | ((ULong)CR_THREAD_ROLE << 48) | (ULong)thread_role[tid]);
   }
}

static void note_thread(ThreadId tid)
{
   if (tid != written_tid && tid != VG_INVALID_THREADID) {
      put_word((K_THREAD << 60) | (ULong)tid);
      written_tid = tid;
   }
   put_role(tid);
}

static void set_role(ThreadId tid, UInt role)
{
   if (tid >= VG_N_THREADS || (thread_role[tid] == role && !role_pending[tid]))
      return;
   thread_role[tid] = role;
   role_pending[tid] = True;
   if (tracing && tid == written_tid)
      put_role(tid);
}

static void ot_thread_created(ThreadId parent, ThreadId child) { set_role(child, 0); }

static void put_marker(UInt code, UInt arg)
{
   note_thread(VG_(get_running_tid)());
   put_word((K_MARKER << 60) | ((ULong)(code & 0xff) << 48) | (ULong)arg);
}

/*------------------------------------------------------------*/
/*--- MAP records                                          ---*/
/*------------------------------------------------------------*/

typedef struct {
   Addr avma;
   SizeT size;
   PtrdiffT bias;
   HChar* name;
} Mapped;

#define MAX_MAPPED 4096 /* objects with code in one process; more -> no more MAPs */
static Mapped* mapped;
static UInt n_mapped = 0;
static Bool mapped_overflow_warned = False;
static Addr map_cache_lo = 1, map_cache_hi = 0; /* text range known to be mapped */

static void put_map(Addr avma, SizeT size, PtrdiffT bias, const HChar* name)
{
   SizeT name_len = VG_(strlen)(name);
   if (name_len > 0xffff)
      name_len = 0xffff;
   SizeT name_words = (name_len + 7) / 8;
   note_thread(VG_(get_running_tid)());
   put_word((K_MAP << 60) | (ULong)name_len);
   put_word((ULong)avma);
   put_word((ULong)size);
   put_word((ULong)(Long)bias);
   for (SizeT i = 0; i < name_words; i++) {
      ULong w = 0;
      for (SizeT j = 0; j < 8 && i * 8 + j < name_len; j++)
         w |= (ULong)(UChar)name[i * 8 + j] << (8 * j);
      put_word(w);
   }
}

/* Called at instrumentation time for each instruction address: writes the MAP of
   its object if this stream has none yet.  Instrumentation precedes execution, so
   the MAP precedes the first IFETCH inside the object. */
static void ensure_mapped(Addr a)
{
   if (a >= map_cache_lo && a < map_cache_hi)
      return;
   DebugInfo* di = VG_(find_DebugInfo)(VG_(current_DiEpoch)(), a);
   if (di == NULL)
      return; /* generated code, or no object: nothing to map */
   /* The MAP covers the text and the PLT (lazy-binding stubs run as code too); they
      are adjacent in the executable mapping. */
   Addr avma = VG_(DebugInfo_get_text_avma)(di);
   Addr end = avma + VG_(DebugInfo_get_text_size)(di);
   Addr plt = VG_(DebugInfo_get_plt_avma)(di);
   SizeT plt_size = VG_(DebugInfo_get_plt_size)(di);
   if (end == avma) {
      avma = plt;
      end = plt + plt_size;
   } else if (plt_size > 0) {
      avma = plt < avma ? plt : avma;
      end = plt + plt_size > end ? plt + plt_size : end;
   }
   SizeT size = end - avma;
   if (size == 0 || a < avma || a >= end)
      return;
   const HChar* name = VG_(DebugInfo_get_filename)(di);
   if (name == NULL)
      name = "";
   map_cache_lo = avma;
   map_cache_hi = avma + size;
   for (UInt i = 0; i < n_mapped; i++)
      if (mapped[i].avma == avma && mapped[i].size == size &&
          VG_(strcmp)(mapped[i].name, name) == 0)
         return;
   if (n_mapped == MAX_MAPPED) {
      if (!mapped_overflow_warned)
         VG_(umsg)("oltptrace: more than %d objects with code; no more MAP records\n",
                   MAX_MAPPED);
      mapped_overflow_warned = True;
      return;
   }
   mapped[n_mapped].avma = avma;
   mapped[n_mapped].size = size;
   mapped[n_mapped].name = VG_(strdup)("ot.mapped", name);
   mapped[n_mapped].bias = VG_(DebugInfo_get_text_bias)(di);
   n_mapped++;
   put_map(avma, size, VG_(DebugInfo_get_text_bias)(di), name);
}

/*------------------------------------------------------------*/
/*--- Run-time helpers                                     ---*/
/*------------------------------------------------------------*/

/* What one helper call writes: w[0] is the run's IFETCH word (written only if
   has_ifetch), w[1..n] are data-record templates (kind and size, address 0) that
   the helper ORs with its address arguments.  Deduplicated, never freed: the
   memory is bounded by the distinct (run, access) shapes of the program's code. */
typedef struct {
   ULong ninstr;     /* instructions this call accounts for (0 without IFETCH) */
   ULong has_ifetch; /* 0 or 1: words of w[0] to keep */
   ULong w[6];
} Desc;

#define MAX_CALL_ADDRS 5 /* amd64 dirty calls take 6 integer args: desc + 5 */

static DedupPoolAlloc* desc_pool;

#define HELPER_HEAD                                   \
   if (UNLIKELY(!tracing))                            \
      return;                                         \
   ULong* p = room();                                 \
   n_instr_traced += d->ninstr;                       \
   p[0] = d->w[0];                                    \
   p += d->has_ifetch;

static VG_REGPARM(1) void h0(const Desc* d)
{
   HELPER_HEAD
   buf_pos = p;
}

static VG_REGPARM(2) void h1(const Desc* d, Addr a1)
{
   HELPER_HEAD
   p[0] = d->w[1] | (a1 & ADDR_MASK);
   buf_pos = p + 1;
}

static VG_REGPARM(3) void h2(const Desc* d, Addr a1, Addr a2)
{
   HELPER_HEAD
   p[0] = d->w[1] | (a1 & ADDR_MASK);
   p[1] = d->w[2] | (a2 & ADDR_MASK);
   buf_pos = p + 2;
}

static void h3(const Desc* d, Addr a1, Addr a2, Addr a3)
{
   HELPER_HEAD
   p[0] = d->w[1] | (a1 & ADDR_MASK);
   p[1] = d->w[2] | (a2 & ADDR_MASK);
   p[2] = d->w[3] | (a3 & ADDR_MASK);
   buf_pos = p + 3;
}

static void h4(const Desc* d, Addr a1, Addr a2, Addr a3, Addr a4)
{
   HELPER_HEAD
   p[0] = d->w[1] | (a1 & ADDR_MASK);
   p[1] = d->w[2] | (a2 & ADDR_MASK);
   p[2] = d->w[3] | (a3 & ADDR_MASK);
   p[3] = d->w[4] | (a4 & ADDR_MASK);
   buf_pos = p + 4;
}

static void h5(const Desc* d, Addr a1, Addr a2, Addr a3, Addr a4, Addr a5)
{
   HELPER_HEAD
   p[0] = d->w[1] | (a1 & ADDR_MASK);
   p[1] = d->w[2] | (a2 & ADDR_MASK);
   p[2] = d->w[3] | (a3 & ADDR_MASK);
   p[3] = d->w[4] | (a4 & ADDR_MASK);
   p[4] = d->w[5] | (a5 & ADDR_MASK);
   buf_pos = p + 5;
}

/*------------------------------------------------------------*/
/*--- Instrumentation                                      ---*/
/*------------------------------------------------------------*/

typedef IRExpr IRAtom; /* flat IR: a constant or a temporary */

typedef struct {
   ULong kind; /* K_LOAD, K_STORE or K_MODIFY */
   IRAtom* addr;
   UInt size;
   IRAtom* guard; /* NULL: unconditional */
} Access;

#define MAX_RUN_ACCESSES 1024 /* a full list is flushed early (a run split in two) */

/* The run being collected while walking one superblock. */
static Access acc[MAX_RUN_ACCESSES];
static UInt n_acc;
static UInt instr_first_acc; /* index of the current instruction's first access */
static Bool run_open;
static Addr run_addr, run_end;
static UInt run_ninstr;
static Bool run_ifetch_done; /* IFETCH of the open run already emitted (list overflow) */

static void emit_call_helper(IRSB* sb, Bool with_ifetch, const Access* a, UInt n,
                             IRAtom* guard)
{
   tl_assert(n <= MAX_CALL_ADDRS);
   Desc d;
   VG_(memset)(&d, 0, sizeof d);
   if (with_ifetch) {
      ULong len = run_end - run_addr;
      if (len > MAX_RUN_LEN)
         len = MAX_RUN_LEN; /* only the 19-byte client-request sequence; see design doc */
      tl_assert(run_ninstr >= 1 && run_ninstr <= RUN_BLOCK);
      d.ninstr = run_ninstr;
      d.has_ifetch = 1;
      d.w[0] = (K_IFETCH << 60) | (len << 54) | ((ULong)run_ninstr << 48) |
               ((ULong)run_addr & ADDR_MASK);
   }
   for (UInt i = 0; i < n; i++) {
      tl_assert(a[i].size >= 1 && a[i].size <= MAX_ACCESS_SIZE);
      d.w[1 + i] = (a[i].kind << 60) | ((ULong)a[i].size << 48);
   }
   const Desc* dd = VG_(allocEltDedupPA)(desc_pool, sizeof d, &d);
   IRExpr* dp = mkIRExpr_HWord((HWord)dd);
   IRExpr** argv;
   const HChar* name;
   void* fn;
   switch (n) {
   case 0:
      argv = mkIRExprVec_1(dp);
      name = "ot_h0";
      fn = h0;
      break;
   case 1:
      argv = mkIRExprVec_2(dp, a[0].addr);
      name = "ot_h1";
      fn = h1;
      break;
   case 2:
      argv = mkIRExprVec_3(dp, a[0].addr, a[1].addr);
      name = "ot_h2";
      fn = h2;
      break;
   case 3:
      argv = mkIRExprVec_4(dp, a[0].addr, a[1].addr, a[2].addr);
      name = "ot_h3";
      fn = h3;
      break;
   case 4:
      argv = mkIRExprVec_5(dp, a[0].addr, a[1].addr, a[2].addr, a[3].addr);
      name = "ot_h4";
      fn = h4;
      break;
   default:
      argv = mkIRExprVec_6(dp, a[0].addr, a[1].addr, a[2].addr, a[3].addr, a[4].addr);
      name = "ot_h5";
      fn = h5;
      break;
   }
   Int regparms = n + 1 > 3 ? 3 : (Int)n + 1; /* ignored on amd64: all args in regs */
   IRDirty* di = unsafeIRDirty_0_N(regparms, name, VG_(fnptr_to_fnentry)(fn), argv);
   if (guard != NULL)
      di->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

/* Called from generated code when the buffer has no room for one more group. */
static ULong* flush_and_pos(void)
{
   flush_buffer();
   return buf_pos;
}

static IRTemp tmp64(IRSB* sb, IRExpr* e)
{
   IRTemp t = newIRTemp(sb->tyenv, Ity_I64);
   addStmtToIRSB(sb, IRStmt_WrTmp(t, e));
   return t;
}

#define U64(v) IRExpr_Const(IRConst_U64((ULong)(v)))

/* The same records as emit_call_helper, written by generated IR: load buf_pos; if past
   buf_limit, call flush_and_pos (a guarded call); store the words; store the new
   buf_pos; add the run's instructions to the count.  A guarded access stores with
   StoreG and advances buf_pos only when its guard holds.  No `tracing` check: only
   translations made while tracing contain this code, and TRACE_STOP discards them
   (a forked child keeps them, but its buffer is never written out). */
static void emit_call_inline(IRSB* sb, Bool with_ifetch, const Access* a, UInt n,
                             IRAtom* guard)
{
   tl_assert(n <= MAX_CALL_ADDRS);
   IRTemp pos = tmp64(sb, IRExpr_Load(Iend_LE, Ity_I64, U64((HWord)&buf_pos)));
   IRTemp full = newIRTemp(sb->tyenv, Ity_I1);
   addStmtToIRSB(sb, IRStmt_WrTmp(full, IRExpr_Binop(Iop_CmpLT64U, U64((HWord)buf_limit),
                                                      IRExpr_RdTmp(pos))));
   IRTemp fresh = newIRTemp(sb->tyenv, Ity_I64);
   IRDirty* di = unsafeIRDirty_1_N(fresh, 0, "ot_flush_and_pos",
                                   VG_(fnptr_to_fnentry)(flush_and_pos), mkIRExprVec_0());
   di->guard = IRExpr_RdTmp(full);
   addStmtToIRSB(sb, IRStmt_Dirty(di));
   IRTemp p = tmp64(sb, IRExpr_ITE(IRExpr_RdTmp(full), IRExpr_RdTmp(fresh), IRExpr_RdTmp(pos)));
   UInt k = 0;
   if (with_ifetch) {
      ULong len = run_end - run_addr;
      if (len > MAX_RUN_LEN)
         len = MAX_RUN_LEN; /* only the 19-byte client-request sequence; see design doc */
      tl_assert(run_ninstr >= 1 && run_ninstr <= RUN_BLOCK);
      ULong w = (K_IFETCH << 60) | (len << 54) | ((ULong)run_ninstr << 48) |
                ((ULong)run_addr & ADDR_MASK);
      addStmtToIRSB(sb, IRStmt_Store(Iend_LE, IRExpr_RdTmp(p), U64(w)));
      k = 1;
   }
   for (UInt i = 0; i < n; i++) {
      tl_assert(a[i].size >= 1 && a[i].size <= MAX_ACCESS_SIZE);
      ULong tmpl = (a[i].kind << 60) | ((ULong)a[i].size << 48);
      IRTemp m = tmp64(sb, IRExpr_Binop(Iop_And64, a[i].addr, U64(ADDR_MASK)));
      IRTemp w = tmp64(sb, IRExpr_Binop(Iop_Or64, IRExpr_RdTmp(m), U64(tmpl)));
      IRTemp at = tmp64(sb, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(p), U64(8 * k)));
      if (guard != NULL)
         addStmtToIRSB(sb, IRStmt_StoreG(Iend_LE, IRExpr_RdTmp(at), IRExpr_RdTmp(w), guard));
      else
         addStmtToIRSB(sb, IRStmt_Store(Iend_LE, IRExpr_RdTmp(at), IRExpr_RdTmp(w)));
      k++;
   }
   IRTemp np = tmp64(sb, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(p), U64(8 * k)));
   if (guard != NULL)
      np = tmp64(sb, IRExpr_ITE(guard, IRExpr_RdTmp(np), IRExpr_RdTmp(p)));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, U64((HWord)&buf_pos), IRExpr_RdTmp(np)));
   if (with_ifetch) {
      IRTemp c = tmp64(sb, IRExpr_Load(Iend_LE, Ity_I64, U64((HWord)&n_instr_traced)));
      IRTemp c2 = tmp64(sb, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(c), U64(run_ninstr)));
      addStmtToIRSB(sb, IRStmt_Store(Iend_LE, U64((HWord)&n_instr_traced), IRExpr_RdTmp(c2)));
   }
}

static void emit_call(IRSB* sb, Bool with_ifetch, const Access* a, UInt n, IRAtom* guard)
{
   if (clo_inline)
      emit_call_inline(sb, with_ifetch, a, n, guard);
   else
      emit_call_helper(sb, with_ifetch, a, n, guard);
}

/* Emits the calls for the accesses collected so far (and the run's IFETCH if not
   yet emitted), in program order. */
static void emit_pending(IRSB* sb)
{
   UInt i = 0;
   Bool need_ifetch = run_open && !run_ifetch_done;
   while (i < n_acc || need_ifetch) {
      if (i < n_acc && acc[i].guard != NULL) {
         if (need_ifetch) { /* the IFETCH precedes its instructions' accesses */
            emit_call(sb, True, NULL, 0, NULL);
            need_ifetch = False;
         }
         emit_call(sb, False, &acc[i], 1, acc[i].guard);
         i++;
         continue;
      }
      UInt j = i;
      while (j < n_acc && j - i < MAX_CALL_ADDRS && acc[j].guard == NULL)
         j++;
      emit_call(sb, need_ifetch, &acc[i], j - i, NULL);
      need_ifetch = False;
      i = j;
   }
   if (run_open)
      run_ifetch_done = True;
   n_acc = 0;
   instr_first_acc = 0;
}

/* Ends the open run: a possible exit follows, or the next instruction does not
   belong to it. */
static void close_run(IRSB* sb)
{
   emit_pending(sb);
   run_open = False;
}

static void add_access(IRSB* sb, ULong kind, IRAtom* addr, Int size, IRAtom* guard)
{
   tl_assert(isIRAtom(addr));
   tl_assert(size >= 1);
   if (size > MAX_ACCESS_SIZE) {
      /* Split: new temps addr + off, computed now (addr is already defined). */
      for (Int off = 0; off < size; off += SPLIT_CHUNK) {
         Int chunk = size - off < SPLIT_CHUNK ? size - off : SPLIT_CHUNK;
         IRTemp t = newIRTemp(sb->tyenv, Ity_I64);
         addStmtToIRSB(sb, IRStmt_WrTmp(t, IRExpr_Binop(Iop_Add64, addr,
                                                         IRExpr_Const(IRConst_U64(off)))));
         add_access(sb, kind, IRExpr_RdTmp(t), chunk, guard);
      }
      return;
   }
   /* A store right after a load of the same bytes in the same instruction is one
      MODIFY (add [mem], r; a locked read-modify-write). */
   if ((kind == K_STORE || kind == K_MODIFY) && n_acc > instr_first_acc) {
      Access* last = &acc[n_acc - 1];
      if (last->kind == K_LOAD && last->size == (UInt)size && last->guard == NULL &&
          guard == NULL && eqIRAtom(last->addr, addr)) {
         last->kind = K_MODIFY;
         return;
      }
   }
   if (n_acc == MAX_RUN_ACCESSES) {
      emit_pending(sb);
   }
   acc[n_acc].kind = kind;
   acc[n_acc].addr = addr;
   acc[n_acc].size = (UInt)size;
   acc[n_acc].guard = guard;
   n_acc++;
}

static void add_instr(IRSB* sb, Addr a, UInt len)
{
   ensure_mapped(a);
   Addr block = a & ~(Addr)(RUN_BLOCK - 1);
   Bool joins = run_open && !run_ifetch_done && a == run_end && len <= MAX_INSTR_LEN &&
                block == (run_addr & ~(Addr)(RUN_BLOCK - 1)) && run_ninstr < RUN_BLOCK;
   if (joins) {
      run_end = a + len;
      run_ninstr++;
   } else {
      if (run_open)
         close_run(sb);
      run_open = True;
      run_addr = a;
      run_end = a + len;
      run_ninstr = 1;
      run_ifetch_done = False;
   }
   instr_first_acc = n_acc;
   /* A client-request sequence (19 bytes, one "instruction" to valgrind) is a run of
      its own: nothing joins it (see the len clamp in emit_call). */
   if (len > MAX_INSTR_LEN)
      close_run(sb);
}

/* Entries of --trace-start-at and --txn-end-at functions. */
#define ENTRY_START 1
#define ENTRY_TXN_END 2
#define ENTRY_STOP 3

static VG_REGPARM(1) void h_entry(UWord what)
{
   if (out_fd < 0)
      return;
   if (what == ENTRY_START && !tracing) {
      /* The process serves a worker (it runs the function the workers call to start
         tracing): its thread has the worker role (probe::Role::Worker = 1). */
      set_role(VG_(get_running_tid)(), 1);
      tracing = True;
      put_marker(CR_TRACE_START, 0);
   } else if (what == ENTRY_TXN_END && tracing) {
      put_marker(CR_TXN_END, 0);
   } else if (what == ENTRY_STOP && tracing) {
      put_marker(CR_TRACE_STOP, 0);
      tracing = False;
      flush_buffer();
   }
}

/* Before the instruction at `a`: a call to h_entry if `a` is the entry of a function
   named by --trace-start-at or --txn-end-at. The open run is closed first, so the
   marker follows the records of the instructions before it. */
static void add_entry_call(IRSB* sb, Addr a)
{
   if (clo_start_at == NULL && clo_txn_end_at == NULL && clo_stop_at == NULL)
      return;
   const HChar* fn = NULL;
   if (!VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), a, &fn) || fn == NULL)
      return;
   UWord what = 0;
   if (clo_start_at != NULL && VG_(strcmp)(fn, clo_start_at) == 0)
      what = ENTRY_START;
   else if (clo_txn_end_at != NULL && VG_(strcmp)(fn, clo_txn_end_at) == 0)
      what = ENTRY_TXN_END;
   else if (clo_stop_at != NULL && VG_(strcmp)(fn, clo_stop_at) == 0)
      what = ENTRY_STOP;
   if (what == 0)
      return;
   close_run(sb);
   IRDirty* d = unsafeIRDirty_0_N(1, "h_entry", VG_(fnptr_to_fnentry)(h_entry),
                                  mkIRExprVec_1(IRExpr_Const(IRConst_U64(what))));
   addStmtToIRSB(sb, IRStmt_Dirty(d));
}

/* ---- Host instructions for what VEX emulates bit by bit -------------------------
   VEX translates PCLMULQDQ and CRC32 into calls of clean C helpers that compute the
   result a bit or a nibble at a time (amd64g_calculate_pclmul, amd64g_calc_crc32b/w/l/q).
   The disk engine's checksums (crc32fast's carry-less-multiply path) spent 1.4 s of a
   12 s `simulate tpcc` in the first, most of it loading the database. When the host
   has the instruction (valgrind reports the host's CPUID to the program, which is why
   the program uses it), each such call is redirected to a helper that executes it: the
   same value, since both compute the instruction's definition. Every translation,
   traced or not: the recorded stream is unchanged (the helpers are not guest code). */

extern ULong amd64g_calc_crc32b(ULong crcIn, ULong b);
extern ULong amd64g_calc_crc32w(ULong crcIn, ULong w);
extern ULong amd64g_calc_crc32l(ULong crcIn, ULong l);
extern ULong amd64g_calc_crc32q(ULong crcIn, ULong q);

static Bool host_pclmul = False;
static Bool host_crc32 = False;

static void detect_host_features(void)
{
   UInt a = 1, b, c = 0, d;
   __asm__ __volatile__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
   host_pclmul = (c >> 1) & 1;  /* CPUID.1:ECX.PCLMULQDQ */
   host_crc32 = (c >> 20) & 1;  /* CPUID.1:ECX.SSE4_2 */
}

typedef long long ot_v2di __attribute__((vector_size(16)));

/* amd64g_calculate_pclmul's contract: the 128-bit carry-less product of a and b, its
   high half if `which`, else its low half. */
__attribute__((target("pclmul"))) static ULong ot_pclmul(ULong a, ULong b, ULong which)
{
   ot_v2di x = {(long long)a, 0}, y = {(long long)b, 0};
   ot_v2di r = __builtin_ia32_pclmulqdq128(x, y, 0);
   return which ? (ULong)r[1] : (ULong)r[0];
}

/* amd64g_calc_crc32*'s contract: CRC-32C steps without inversion, as the instruction.
   VEX passes a 32-bit CRC zero-extended; anything wider goes to VEX's own helper, whose
   result then depends on the upper bits. */
__attribute__((target("sse4.2"))) static ULong ot_crc32b(ULong crc, ULong v)
{
   return crc >> 32 ? amd64g_calc_crc32b(crc, v) : __builtin_ia32_crc32qi((UInt)crc, (UChar)v);
}
__attribute__((target("sse4.2"))) static ULong ot_crc32w(ULong crc, ULong v)
{
   return crc >> 32 ? amd64g_calc_crc32w(crc, v) : __builtin_ia32_crc32hi((UInt)crc, (UShort)v);
}
__attribute__((target("sse4.2"))) static ULong ot_crc32l(ULong crc, ULong v)
{
   return crc >> 32 ? amd64g_calc_crc32l(crc, v) : __builtin_ia32_crc32si((UInt)crc, (UInt)v);
}
__attribute__((target("sse4.2"))) static ULong ot_crc32q(ULong crc, ULong v)
{
   return crc >> 32 ? amd64g_calc_crc32q(crc, v) : __builtin_ia32_crc32di(crc, v);
}

/* The host helper for a VEX helper's name, or NULL. */
static void* fast_helper(const HChar* name, const HChar** fast_name)
{
   if (host_pclmul && VG_(strcmp)(name, "amd64g_calculate_pclmul") == 0) {
      *fast_name = "ot_pclmul";
      return (void*)ot_pclmul;
   }
   if (!host_crc32 || VG_(strncmp)(name, "amd64g_calc_crc32", 17) != 0 || name[18] != 0)
      return NULL;
   switch (name[17]) {
   case 'b': *fast_name = "ot_crc32b"; return (void*)ot_crc32b;
   case 'w': *fast_name = "ot_crc32w"; return (void*)ot_crc32w;
   case 'l': *fast_name = "ot_crc32l"; return (void*)ot_crc32l;
   case 'q': *fast_name = "ot_crc32q"; return (void*)ot_crc32q;
   default: return NULL;
   }
}

/* Redirects, in place, every call of an emulating helper that has a host version (the
   IR is flat: a clean call is the whole right-hand side of a WrTmp). */
static void use_host_helpers(IRSB* sb)
{
   if (!host_pclmul && !host_crc32)
      return;
   for (Int i = 0; i < sb->stmts_used; i++) {
      IRStmt* st = sb->stmts[i];
      if (!st || st->tag != Ist_WrTmp || st->Ist.WrTmp.data->tag != Iex_CCall)
         continue;
      IRExpr* call = st->Ist.WrTmp.data;
      const HChar* fast_name = NULL;
      void* fast = fast_helper(call->Iex.CCall.cee->name, &fast_name);
      if (!fast)
         continue;
      IRCallee* cee = mkIRCallee(call->Iex.CCall.cee->regparms, fast_name,
                                 VG_(fnptr_to_fnentry)(fast));
      sb->stmts[i] = IRStmt_WrTmp(st->Ist.WrTmp.tmp,
                                  IRExpr_CCall(cee, call->Iex.CCall.retty, call->Iex.CCall.args));
   }
}

static IRSB* ot_instrument(VgCallbackClosure* closure, IRSB* sbIn,
                           const VexGuestLayout* layout, const VexGuestExtents* vge,
                           const VexArchInfo* archinfo_host, IRType gWordTy,
                           IRType hWordTy)
{
   /* Following forks, every translation is instrumented (helpers check `tracing`):
      a process starts tracing by itself at a function's entry, without discarding
      the translations its parent made. */
   use_host_helpers(sbIn);
   if ((!tracing && !clo_follow_forks) || out_fd < 0)
      return sbIn;
   if (gWordTy != hWordTy)
      VG_(tool_panic)("oltptrace: host/guest word size mismatch");

   IRSB* sbOut = deepCopyIRSBExceptStmts(sbIn);
   IRTypeEnv* tyenv = sbIn->tyenv;
   Int i = 0;
   while (i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark) {
      addStmtToIRSB(sbOut, sbIn->stmts[i]);
      i++;
   }
   /* Objects may have been unmapped and others mapped since the last translation:
      the cached text range is only trusted within one superblock. */
   map_cache_lo = 1;
   map_cache_hi = 0;
   n_acc = 0;
   instr_first_acc = 0;
   run_open = False;
   run_ifetch_done = False;

   for (; i < sbIn->stmts_used; i++) {
      IRStmt* st = sbIn->stmts[i];
      if (!st || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_IMark:
         add_entry_call(sbOut, (Addr)st->Ist.IMark.addr);
         add_instr(sbOut, (Addr)st->Ist.IMark.addr, st->Ist.IMark.len);
         addStmtToIRSB(sbOut, st);
         break;
      case Ist_WrTmp: {
         IRExpr* data = st->Ist.WrTmp.data;
         if (data->tag == Iex_Load)
            add_access(sbOut, K_LOAD, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty),
                       NULL);
         addStmtToIRSB(sbOut, st);
         break;
      }
      case Ist_Store: {
         IRType ty = typeOfIRExpr(tyenv, st->Ist.Store.data);
         tl_assert(ty != Ity_INVALID);
         add_access(sbOut, K_STORE, st->Ist.Store.addr, sizeofIRType(ty), NULL);
         addStmtToIRSB(sbOut, st);
         break;
      }
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         IRType ty = typeOfIRExpr(tyenv, sg->data);
         tl_assert(ty != Ity_INVALID);
         add_access(sbOut, K_STORE, sg->addr, sizeofIRType(ty), sg->guard);
         addStmtToIRSB(sbOut, st);
         break;
      }
      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType ty = Ity_INVALID, tyWide = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &tyWide, &ty);
         tl_assert(ty != Ity_INVALID);
         add_access(sbOut, K_LOAD, lg->addr, sizeofIRType(ty), lg->guard);
         addStmtToIRSB(sbOut, st);
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None) {
            tl_assert(d->mAddr != NULL && d->mSize != 0);
            if (d->mFx == Ifx_Read)
               add_access(sbOut, K_LOAD, d->mAddr, d->mSize, NULL);
            else if (d->mFx == Ifx_Write)
               add_access(sbOut, K_STORE, d->mAddr, d->mSize, NULL);
            else
               add_access(sbOut, K_MODIFY, d->mAddr, d->mSize, NULL);
         }
         addStmtToIRSB(sbOut, st);
         break;
      }
      case Ist_CAS: {
         /* A read and a write of the location: one MODIFY (merged with the load
            that usually precedes a locked RMW in the same instruction). */
         IRCAS* cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         if (cas->dataHi != NULL)
            size *= 2;
         Access* last = n_acc > instr_first_acc ? &acc[n_acc - 1] : NULL;
         if (last != NULL && last->kind == K_LOAD && last->size == (UInt)size &&
             last->guard == NULL && eqIRAtom(last->addr, cas->addr)) {
            last->kind = K_MODIFY; /* lock add/xadd/...: load, then CAS of the same bytes */
         } else {
            add_access(sbOut, K_LOAD, cas->addr, size, NULL);
            add_access(sbOut, K_STORE, cas->addr, size, NULL);
         }
         addStmtToIRSB(sbOut, st);
         break;
      }
      case Ist_LLSC: {
         if (st->Ist.LLSC.storedata == NULL) {
            IRType ty = typeOfIRTemp(tyenv, st->Ist.LLSC.result);
            add_access(sbOut, K_LOAD, st->Ist.LLSC.addr, sizeofIRType(ty), NULL);
            emit_pending(sbOut); /* no helper between LL and SC: helps SC succeed */
         } else {
            IRType ty = typeOfIRExpr(tyenv, st->Ist.LLSC.storedata);
            add_access(sbOut, K_STORE, st->Ist.LLSC.addr, sizeofIRType(ty), NULL);
         }
         addStmtToIRSB(sbOut, st);
         break;
      }
      case Ist_Exit:
         close_run(sbOut); /* records of the run precede a possible side exit */
         addStmtToIRSB(sbOut, st);
         break;
      default: /* Put, PutI, MBE, AbiHint */
         addStmtToIRSB(sbOut, st);
         break;
      }
   }
   close_run(sbOut);
   return sbOut;
}

/*------------------------------------------------------------*/
/*--- Tracing on and off, threads, client requests         ---*/
/*------------------------------------------------------------*/

static void discard_all_translations(void)
{
   /* Instrumentation depends on `tracing`: retranslate everything. */
   VG_(discard_translations_safely)((Addr)0x1000, ~(SizeT)0xfff, "oltptrace");
}

static void start_tracing(void)
{
   if (tracing || out_fd < 0)
      return;
   tracing = True;
   put_marker(CR_TRACE_START, 0);
   if (!clo_follow_forks)
      discard_all_translations();
}

static void stop_tracing(void)
{
   if (!tracing)
      return;
   put_marker(CR_TRACE_STOP, 0);
   tracing = False;
   flush_buffer();
   if (!clo_follow_forks)
      discard_all_translations();
}

static void ot_start_client_code(ThreadId tid, ULong blocks_dispatched)
{
   if (tracing)
      note_thread(tid);
}

static Bool ot_handle_client_request(ThreadId tid, UWord* args, UWord* ret)
{
   if (!VG_IS_TOOL_USERREQ('O', 'S', args[0]))
      return False;
   UWord code = args[0] & 0xffff;
   switch (code) {
   case CR_OP_BEGIN:
   case CR_OP_END:
   case CR_TXN_BEGIN:
   case CR_TXN_END:
   case CR_CTX_POINT:
   case CR_CONTEXT:
   case CR_BTREE_LEVEL:
      if (tracing) {
         note_thread(tid);
         put_marker((UInt)code, (UInt)args[1]);
      }
      break;
   case CR_TRACE_START:
      start_tracing();
      break;
   case CR_TRACE_STOP:
      stop_tracing();
      break;
   case CR_THREAD_ROLE:
      if (tracing)
         note_thread(tid); /* writes the THREAD (if needed) and, below, the role */
      set_role(tid, (UInt)args[1]);
      break;
   default:
      return False;
   }
   *ret = 0;
   return True;
}

/* A forked child must not write into the parent's stream: it stops tracing and
   forgets the stream (the parent flushed its buffer before the fork). */
static void ot_atfork_pre(ThreadId tid) { flush_buffer(); }
static void put_header(void);
static void ot_atfork_child(ThreadId tid)
{
   if (clo_follow_forks && out_fd >= 0) {
      /* A stream of its own in the shared pipe: a header, the objects its parent
         mapped (its inherited translations will not announce them again), and
         nothing else until it starts tracing. */
      my_pid = VG_(getpid)();
      buf_pos = buf;
      tracing = False;
      n_instr_traced = 0;
      written_tid = VG_INVALID_THREADID;
      put_header();
      for (UInt i = 0; i < n_mapped; i++)
         put_map(mapped[i].avma, mapped[i].size, mapped[i].bias, mapped[i].name);
      return;
   }
   if (out_fd >= 0)
      VG_(close)(out_fd);
   out_fd = -1;
   tracing = False;
   buf_pos = buf;
}

/* execve replaces the traced image without calling the tool's fini: flush so the
   records so far reach the reader (the stream then ends without END). */
static void ot_pre_syscall(ThreadId tid, UInt syscallno, UWord* args, UInt nArgs)
{
   if (syscallno == __NR_execve || syscallno == __NR_execveat)
      flush_buffer();
}

static void ot_post_syscall(ThreadId tid, UInt syscallno, UWord* args, UInt nArgs,
                            SysRes res)
{
}

/*------------------------------------------------------------*/
/*--- Setup and teardown                                   ---*/
/*------------------------------------------------------------*/

static void put_header(void)
{
   /* Header: magic, version 1, flags 0. */
   put_word(0x314543415254534FULL); /* "OSTRACE1" read as a little-endian u64 */
   put_word(1ULL);
}

static void ot_post_clo_init(void)
{
   detect_host_features();
   HChar* path = VG_(expand_file_name)("--trace-out", clo_trace_out);
   clo_trace_out = path;
   SysRes sr = VG_(open)(path, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC, 0644);
   if (sr_isError(sr)) {
      VG_(fmsg)("oltptrace: cannot open --trace-out file '%s' (error %lu)\n", path,
                sr_Err(sr));
      VG_(exit)(2);
   }
   Int fd = VG_(safe_fd)((Int)sr_Res(sr));
   if (fd < 0) {
      VG_(fmsg)("oltptrace: cannot move the trace fd out of the client's range\n");
      VG_(exit)(2);
   }
   out_fd = fd;
   /* A FIFO: a 1 MiB pipe (the usual maximum) instead of 64 KiB means 16 times fewer
      context switches between the tool and the reader. Fails harmlessly on files. */
   (void)VG_(fcntl)(fd, VKI_F_SETPIPE_SZ, 1 << 20);

   buf = VG_(malloc)("ot.buf", BUF_WORDS * sizeof(ULong));
   buf_pos = buf;
   buf_limit = buf + BUF_WORDS - MAX_CALL_WORDS;
   mapped = VG_(malloc)("ot.mapped", MAX_MAPPED * sizeof(Mapped));
   thread_role = VG_(calloc)("ot.role", VG_N_THREADS, sizeof(UInt));
   role_pending = VG_(calloc)("ot.role", VG_N_THREADS, sizeof(Bool));
   desc_pool = VG_(newDedupPA)(64 * 1024, sizeof(ULong), VG_(malloc), "ot.desc", VG_(free));

   my_pid = VG_(getpid)();
   if (clo_follow_forks)
      clo_inline = False; /* helpers check `tracing`: translations serve both states */
   put_header();
   VG_(atfork)(ot_atfork_pre, NULL, ot_atfork_child);

   if (clo_trace_start) {
      /* The THREAD record precedes the marker: thread 1 runs first. */
      tracing = True;
      note_thread(1);
      put_word((K_MARKER << 60) | ((ULong)CR_TRACE_START << 48));
   }
}

static void ot_fini(Int exitcode)
{
   if (out_fd < 0)
      return;
   put_word(K_END << 60);
   put_word(n_instr_traced);
   flush_buffer();
   VG_(close)(out_fd);
   out_fd = -1;
   if (VG_(clo_verbosity) > 1)
      VG_(umsg)("oltptrace: %llu instructions traced, %llu bytes written\n", n_instr_traced,
                n_bytes_written);
}

static void ot_pre_clo_init(void)
{
   VG_(details_name)("oltptrace");
   VG_(details_version)("1");
   VG_(details_description)("the oltpscope instruction and data trace streamer");
   VG_(details_copyright_author)("oltpscope authors; MIT OR Apache-2.0");
   VG_(details_bug_reports_to)("the oltpscope project");
   VG_(details_avg_translation_sizeB)(275);

   VG_(basic_tool_funcs)(ot_post_clo_init, ot_instrument, ot_fini);
   VG_(needs_command_line_options)(ot_process_cmd_line_option, ot_print_usage,
                                   ot_print_debug_usage);
   VG_(needs_client_requests)(ot_handle_client_request);
   VG_(track_start_client_code)(ot_start_client_code);
   VG_(track_pre_thread_ll_create)(ot_thread_created);
   VG_(needs_syscall_wrapper)(ot_pre_syscall, ot_post_syscall);
}

VG_DETERMINE_INTERFACE_VERSION(ot_pre_clo_init)
