// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
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
#include "detpath_meta.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int xsk_stamp(struct xdp_md *ctx)
{
	dp_stamp_rx(ctx);
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}
