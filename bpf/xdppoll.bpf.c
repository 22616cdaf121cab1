// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* xdppoll: frames for this endpoint (see detpath_filter.h) are copied whole
 * into a BPF ring buffer that user space busy-polls, then dropped; all other
 * traffic goes on to the kernel (XDP_PASS). As in paper 000's "XDP Poll". */
#include "detpath_filter.h"

/* Largest frame copied; bigger ones are counted as dropped. MTU 1500 + 14 fits. */
#define DP_POLL_MAX_FRAME 2048

/* rx_ns: bpf_ktime_get_ns() when the program saw the frame, written only
 * under DP_CFG_RX_STAMP (else 0). */
struct dp_poll_record {
	__u32 len;
	__u32 _pad;
	__u64 rx_ns;
	__u8 data[DP_POLL_MAX_FRAME];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* 4 MiB: about 2000 records */
} dp_ring SEC(".maps");

SEC("xdp")
int detpath_xdppoll(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	const struct dp_filter_config *cfg = dp_get_config();

	if (!cfg || !dp_is_ours(data, data_end, cfg)) {
		dp_count(DP_STAT_PASSED);
		return XDP_PASS;
	}
	__u32 len = (__u32)(data_end - data);
	/* The verifier needs the copy length bounded by a mask, not only a test. */
	if (len == 0 || len > DP_POLL_MAX_FRAME) {
		dp_count(DP_STAT_DROPPED);
		return XDP_DROP;
	}
	struct dp_poll_record *rec = bpf_ringbuf_reserve(&dp_ring, sizeof(*rec), 0);
	if (!rec) {
		dp_count(DP_STAT_DROPPED);
		return XDP_DROP;
	}
	/* The verifier must see 1 <= n <= DP_POLL_MAX_FRAME; clang 14 folds a
	 * C-level mask away after the test above, so the mask is in asm. */
	__u32 n = len - 1;
	asm volatile("%0 &= 0x7ff" : "+r"(n));
	n += 1;
	if (bpf_xdp_load_bytes(ctx, 0, rec->data, n) < 0) {
		bpf_ringbuf_discard(rec, 0);
		dp_count(DP_STAT_DROPPED);
		return XDP_DROP;
	}
	rec->len = len;
	rec->rx_ns = (cfg->flags & DP_CFG_RX_STAMP) ? bpf_ktime_get_ns() : 0;
	bpf_ringbuf_submit(rec, 0);
	dp_count(DP_STAT_MATCHED);
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
