// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* ktrace: what the kernel did on each core while a benchmark ran, for the
 * rounds the user-space probes cannot explain (`detpath bench --trace-kernel`).
 *
 * Raw tracepoints on hard interrupts (device IRQs, the local timer, the
 * reschedule and call-function IPIs), softirqs, context switches and NAPI
 * polls. Interrupts and softirqs are emitted once, at exit, with their entry
 * time (a per-CPU slot per kind), so one record is one interval; a context
 * switch is a point (the task switched out, which ran until then); a NAPI
 * poll is a point with the frames it processed. Records go to one BPF ring
 * buffer without waking the reader (it drains on its own clock: a wake-up per
 * record would make the reader itself the busiest task in the trace); records
 * that find it full are counted in kt_dropped, never block.
 * Nothing here reads packet data. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define KT_IRQ 1        /* a device interrupt handler; num = irq */
#define KT_SOFTIRQ 2    /* num = softirq vector (NET_RX = 3, TIMER = 1, ...) */
#define KT_TIMER 3      /* the local APIC timer interrupt */
#define KT_IPI_RESCHED 4
#define KT_IPI_CALL 5   /* call-function and call-function-single IPIs */
#define KT_SWITCH 6     /* point: pid/comm = the task switched out, arg = its state */
#define KT_NAPI 7       /* point: arg = frames processed by one poll */
#define KT_SLOTS 8

struct kt_event {
	__u64 start;
	__u64 end;
	__u32 cpu;
	__u16 kind;
	__u16 num;
	__u32 pid;
	__u32 arg;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* 16 MiB: about 350,000 records between two reads */
} kt_events SEC(".maps");

/* Entry time per CPU and kind (softirqs share one slot: they do not nest). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KT_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} kt_entry SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} kt_dropped SEC(".maps");

static __always_inline void kt_enter(__u32 kind)
{
	__u64 *slot = bpf_map_lookup_elem(&kt_entry, &kind);
	if (slot)
		*slot = bpf_ktime_get_ns();
}

static __always_inline struct kt_event *kt_reserve(__u16 kind, __u16 num)
{
	struct kt_event *e = bpf_ringbuf_reserve(&kt_events, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *d = bpf_map_lookup_elem(&kt_dropped, &zero);
		if (d)
			*d += 1;
		return 0;
	}
	e->cpu = bpf_get_smp_processor_id();
	e->kind = kind;
	e->num = num;
	e->pid = 0;
	e->arg = 0;
	e->comm[0] = 0;
	return e;
}

static __always_inline void kt_exit(__u32 kind, __u16 num)
{
	__u64 *slot = bpf_map_lookup_elem(&kt_entry, &kind);
	if (!slot || *slot == 0)
		return; /* the entry happened before we attached */
	__u64 start = *slot;
	*slot = 0;
	struct kt_event *e = kt_reserve(kind, num);
	if (!e)
		return;
	e->start = start;
	e->end = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

SEC("raw_tp/irq_handler_entry")
int kt_irq_in(struct bpf_raw_tracepoint_args *ctx) { kt_enter(KT_IRQ); return 0; }
SEC("raw_tp/irq_handler_exit")
int kt_irq_out(struct bpf_raw_tracepoint_args *ctx) { kt_exit(KT_IRQ, (__u16)ctx->args[0]); return 0; }

SEC("raw_tp/softirq_entry")
int kt_soft_in(struct bpf_raw_tracepoint_args *ctx) { kt_enter(KT_SOFTIRQ); return 0; }
SEC("raw_tp/softirq_exit")
int kt_soft_out(struct bpf_raw_tracepoint_args *ctx) { kt_exit(KT_SOFTIRQ, (__u16)ctx->args[0]); return 0; }

SEC("raw_tp/local_timer_entry")
int kt_timer_in(struct bpf_raw_tracepoint_args *ctx) { kt_enter(KT_TIMER); return 0; }
SEC("raw_tp/local_timer_exit")
int kt_timer_out(struct bpf_raw_tracepoint_args *ctx) { kt_exit(KT_TIMER, 0); return 0; }

SEC("raw_tp/reschedule_entry")
int kt_resched_in(struct bpf_raw_tracepoint_args *ctx) { kt_enter(KT_IPI_RESCHED); return 0; }
SEC("raw_tp/reschedule_exit")
int kt_resched_out(struct bpf_raw_tracepoint_args *ctx) { kt_exit(KT_IPI_RESCHED, 0); return 0; }

SEC("raw_tp/call_function_entry")
int kt_call_in(struct bpf_raw_tracepoint_args *ctx) { kt_enter(KT_IPI_CALL); return 0; }
SEC("raw_tp/call_function_exit")
int kt_call_out(struct bpf_raw_tracepoint_args *ctx) { kt_exit(KT_IPI_CALL, 0); return 0; }
SEC("raw_tp/call_function_single_entry")
int kt_call1_in(struct bpf_raw_tracepoint_args *ctx) { kt_enter(KT_IPI_CALL); return 0; }
SEC("raw_tp/call_function_single_exit")
int kt_call1_out(struct bpf_raw_tracepoint_args *ctx) { kt_exit(KT_IPI_CALL, 0); return 0; }

/* sched_switch(bool preempt, prev, next, prev_state): `current` is still prev. */
SEC("raw_tp/sched_switch")
int kt_switch(struct bpf_raw_tracepoint_args *ctx)
{
	struct kt_event *e = kt_reserve(KT_SWITCH, (__u16)ctx->args[0]);
	if (!e)
		return 0;
	e->start = e->end = bpf_ktime_get_ns();
	e->pid = (__u32)bpf_get_current_pid_tgid();
	e->arg = (__u32)ctx->args[3];
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/* napi_poll(napi, work, budget) */
SEC("raw_tp/napi_poll")
int kt_napi(struct bpf_raw_tracepoint_args *ctx)
{
	struct kt_event *e = kt_reserve(KT_NAPI, 0);
	if (!e)
		return 0;
	e->start = e->end = bpf_ktime_get_ns();
	e->arg = (__u32)ctx->args[1];
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
