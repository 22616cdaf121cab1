// SPDX-License-Identifier: Apache-2.0
/* detpath_meta.h: the receive time stamp a detpath XDP program hands to user
 * space, in the frame's XDP metadata area (afxdp, dpdk's net_af_xdp: the 16
 * bytes just before the frame in the UMEM chunk or mbuf) or in a ring record
 * (xdppoll keeps only rx_ns). magic says the stamp was written for this frame;
 * user space clears it after reading, so a reused buffer never shows a stale
 * one. User space: crates/detpath/src/datapath/filter.rs (rx_meta_stamp). */
#ifndef DETPATH_META_H
#define DETPATH_META_H

#include <linux/types.h>

#define DP_RX_META_MAGIC 0x64707473u /* "dpts" */

struct dp_rx_meta {
	__u64 rx_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 magic;
	__u32 reserved;
};

#endif /* DETPATH_META_H */
