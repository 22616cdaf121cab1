// SPDX-License-Identifier: Apache-2.0
/* xsk_stamp: the XDP program the dpdk datapath hands to DPDK's net_af_xdp
 * (its `xdp_prog=` device argument) when the spec asks for `rx_stamp=xdp`.
 *
 * net_af_xdp owns the queue's AF_XDP socket and does its own ARP and
 * filtering in user space, so, like the program it loads by default, this
 * one redirects every frame of a queue that has a socket in xsks_map (the
 * map name net_af_xdp looks up) and passes the rest to the kernel. Before
 * that it writes a struct dp_rx_meta holding bpf_ktime_get_ns() into the
 * frame's XDP metadata, which the kernel copies into the buffer just before
 * the frame, inside the mbuf's headroom. A driver without metadata support
 * refuses the growth: the frame goes unstamped and user space uses its own
 * clock. No configuration map: net_af_xdp loads the object itself. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "detpath_meta.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int xsk_stamp(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct dp_rx_meta)) == 0) {
		struct dp_rx_meta *meta = (void *)(long)ctx->data_meta;

		if ((void *)(meta + 1) <= (void *)(long)ctx->data) {
			meta->rx_ns = bpf_ktime_get_ns();
			meta->magic = DP_RX_META_MAGIC;
			meta->reserved = 0;
		}
	}
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}
