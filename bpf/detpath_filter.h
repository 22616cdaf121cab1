// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* detpath_filter.h: the match logic every detpath XDP datapath program shares
 * (xsk_redirect.bpf.c for afxdp, xdppoll.bpf.c for xdppoll).
 *
 * A frame is "ours" when it is Ethernet II / IPv4 (any IHL; options skipped,
 * not interpreted) / UDP with destination address == dp_config.addr and
 * destination port == dp_config.port; or, when dp_config.ethertype is not
 * zero (frame endpoints: CycloneDDS raweth, paper 001's layer-2 mode), any
 * Ethernet II frame of that EtherType (user space checks the destination MAC). Everything else (ARP, IPv6, VLAN-tagged,
 * TCP, ICMP, other addresses or ports, truncated headers) is NOT ours and
 * the program returns XDP_PASS, so the rest of the host keeps working.
 *
 * IPv4 fragments: the first fragment (offset 0) carries the UDP header and is
 * matched by its port like any frame; its (source, IP id) then goes into
 * dp_frags, so the later fragments of that datagram (offset != 0, no UDP
 * header) are ours too; the last one (MF clear) removes the entry. User
 * space reassembles (detpath_wire::reasm). A later fragment that arrives
 * before its first one is not recognised and passes to the kernel (lost:
 * the sender's reliability protocol resends).
 *
 * Checksums are not checked here; user space verifies them.
 *
 * Maps (user space: crates/detpath/src/xdp.rs):
 *   dp_config  ARRAY[1] of struct dp_filter_config, written before attach.
 *              flags: DP_CFG_RX_STAMP asks for a receive time stamp.
 *              An all-zero config matches nothing.
 *   dp_frags   LRU_HASH (source, IP id) of fragmented datagrams to us whose
 *              first fragment matched; written by the program only.
 *   dp_stats   PERCPU_ARRAY[DP_STAT_MAX] of __u64:
 *              DP_STAT_MATCHED  ours, handed to user space (redirected / queued)
 *              DP_STAT_PASSED   not ours, XDP_PASS to the kernel stack
 *              DP_STAT_DROPPED  ours, but could not be handed over (no socket
 *                               on this queue, ring full): XDP_DROP
 *
 * This header is a stable interface: programs include it, user space reads
 * the maps by these names and indices. */
#ifndef DETPATH_FILTER_H
#define DETPATH_FILTER_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "detpath_meta.h"

/* Network byte order, as on the wire. ethertype != 0 selects the EtherType
 * match (addr and port are then ignored); it took the place of a padding
 * field, so a config written without it (zero) keeps the UDP match.
 * flags (host order): DP_CFG_* below. */
struct dp_filter_config {
	__be32 addr;
	__be16 port;
	__be16 ethertype;
	__u32 flags;
};

/* Time-stamp each frame that is ours with bpf_ktime_get_ns() (CLOCK_MONOTONIC)
 * as the program sees it (spec key rx_stamp=xdp): the earliest instant the
 * host knows of the frame, before any user-space polling delay. */
#define DP_CFG_RX_STAMP 1u


enum dp_stat {
	DP_STAT_MATCHED = 0,
	DP_STAT_PASSED = 1,
	DP_STAT_DROPPED = 2,
	DP_STAT_MAX = 3,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dp_filter_config);
} dp_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} dp_stats SEC(".maps");

/* A fragmented datagram to us: its source and IPv4 identification. */
struct dp_frag_key {
	__be32 saddr;
	__be16 id;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, struct dp_frag_key);
	__type(value, __u8);
} dp_frags SEC(".maps");

/* Adds one to counter idx (an enum dp_stat) on this CPU. */
static __always_inline void dp_count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&dp_stats, &idx);

	if (c)
		*c += 1;
}

/* The configuration, or NULL (never, for an ARRAY of 1; checked for the verifier). */
static __always_inline const struct dp_filter_config *dp_get_config(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&dp_config, &zero);
}

/* 1 when the frame in [data, data_end) is for this endpoint, else 0. */
static __always_inline int dp_is_ours(void *data, void *data_end, const struct dp_filter_config *cfg)
{
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	__u32 ihl;

	if (!cfg)
		return 0;
	if ((void *)(eth + 1) > data_end)
		return 0;
	if (cfg->ethertype != 0)
		return eth->h_proto == cfg->ethertype;
	if (cfg->addr == 0)
		return 0;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end)
		return 0;
	if (ip->version != 4 || ip->ihl < 5)
		return 0;
	if (ip->protocol != IPPROTO_UDP || ip->daddr != cfg->addr)
		return 0;
	if (ip->frag_off & bpf_htons(0x1fff)) {
		/* A later fragment: no UDP header; ours if its first fragment was. */
		struct dp_frag_key k = { .saddr = ip->saddr, .id = ip->id, .pad = 0 };

		if (!bpf_map_lookup_elem(&dp_frags, &k))
			return 0;
		if (!(ip->frag_off & bpf_htons(0x2000)))
			bpf_map_delete_elem(&dp_frags, &k);
		return 1;
	}
	ihl = (__u32)ip->ihl * 4; /* 20..60 */
	udp = (void *)ip + ihl;
	if ((void *)(udp + 1) > data_end)
		return 0;
	if (udp->dest != cfg->port)
		return 0;
	if (ip->frag_off & bpf_htons(0x2000)) {
		/* The first fragment of a datagram to us: remember it for the rest. */
		struct dp_frag_key k = { .saddr = ip->saddr, .id = ip->id, .pad = 0 };
		__u8 one = 1;

		bpf_map_update_elem(&dp_frags, &k, &one, BPF_ANY);
	}
	return 1;
}

#endif /* DETPATH_FILTER_H */
