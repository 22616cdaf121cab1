// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* detpath_meta.h: the receive time stamp a detpath XDP program hands to user
 * space, in the frame's XDP metadata area (afxdp, dpdk's net_af_xdp: the 16
 * bytes just before the frame in the UMEM chunk or mbuf) or in a ring record
 * (xdppoll keeps only rx_ns). magic says the stamp was written for this frame;
 * user space clears it after reading, so a reused buffer never shows a stale
 * one. User space: crates/detpath/src/datapath/filter.rs (rx_meta_stamp). */
#ifndef DETPATH_META_H
#define DETPATH_META_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#define DP_RX_META_MAGIC 0x64707473u /* "dpts" */

struct dp_rx_meta {
	__u64 rx_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 magic;
	__u32 reserved;
};

/* Grows ctx's metadata area by a struct dp_rx_meta and stamps it with
 * bpf_ktime_get_ns(). A driver without metadata support refuses the growth:
 * the frame goes unstamped (user space then uses its own clock). */
static __always_inline void dp_stamp_rx(struct xdp_md *ctx)
{
	struct dp_rx_meta *meta;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct dp_rx_meta)) != 0)
		return;
	meta = (void *)(long)ctx->data_meta;
	if ((void *)(meta + 1) > (void *)(long)ctx->data)
		return;
	meta->rx_ns = bpf_ktime_get_ns();
	meta->magic = DP_RX_META_MAGIC;
	meta->reserved = 0;
}

#endif /* DETPATH_META_H */
