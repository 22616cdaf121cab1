// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* xsk_redirect: the afxdp datapath's XDP program.
 *
 * Frames that are ours (detpath_filter.h: IPv4/UDP to dp_config's address
 * and port, or one EtherType for a frame endpoint) go to the AF_XDP socket registered in xsks_map at the frame's
 * RX queue index. If no socket is registered on that queue (e.g. RSS put the
 * flow on a queue the endpoint is not bound to) the frame is dropped and
 * counted in DP_STAT_DROPPED rather than handed to a kernel stack that has
 * no socket for it. Everything else: XDP_PASS, counted in DP_STAT_PASSED.
 *
 * With DP_CFG_RX_STAMP the program grows the frame's metadata area by a
 * struct dp_rx_meta holding bpf_ktime_get_ns(); the kernel copies metadata
 * into UMEM just before the frame (copy mode too), where user space reads
 * it. A driver without metadata support refuses the growth: no stamp, and
 * user space falls back to its own clock (and counts it). */
#include "detpath_filter.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Queue index -> AF_XDP socket. User space inserts its socket at its queue. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int xsk_redirect(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	const struct dp_filter_config *cfg = dp_get_config();
	long act;

	if (!dp_is_ours(data, data_end, cfg)) {
		dp_count(DP_STAT_PASSED);
		return XDP_PASS;
	}
	if (cfg && (cfg->flags & DP_CFG_RX_STAMP))
		dp_stamp_rx(ctx);
	act = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_DROP);
	dp_count(act == XDP_REDIRECT ? DP_STAT_MATCHED : DP_STAT_DROPPED);
	return act;
}
