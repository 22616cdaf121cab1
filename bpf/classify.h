/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* detpath classify: the structures shared by bpf/classify.bpf.c and the
 * control plane (crates/classify/src/maps.rs mirrors them byte for byte;
 * a test checks the sizes). Every field is in host byte order except the
 * flow key's addresses and ports, which are kept as on the wire. */
#ifndef DETPATH_CLASSIFY_H
#define DETPATH_CLASSIFY_H

#include <linux/types.h>

#define CLS_MAX_MASKS    8    /* distinct match shapes (tuple-space search) */
#define CLS_MAX_ALT      16   /* alternative nodes for forward-when-overloaded */
#define CLS_MAX_XSK      64   /* AF_XDP socket slots (index = rx queue) */
#define CLS_MAX_CPUS     64   /* cpumap entries */
#define CLS_MAX_RULES    1024 /* rule hash map and rule statistics slots */
#define CLS_MAX_VLAN     2    /* 802.1Q / 802.1ad tags (QinQ) */
#define CLS_MAX_GTP_EXT  4    /* GTP-U extension headers followed */
#define CLS_MAX_V6_EXT   4    /* IPv6 extension headers skipped */
#define CLS_ALT_BY_HASH  0xffffffffu
#define CLS_MAX_SPREAD   16   /* CPUs in one rule's spreading set */

/* cls_flow_key.flags */
#define CLS_F_IPV6   0x01 /* innermost IP is IPv6 */
#define CLS_F_L4     0x02 /* sport/dport are valid (TCP/UDP, not a later fragment) */
#define CLS_F_VXLAN  0x04 /* a VXLAN header was crossed; vni is valid */
#define CLS_F_GTP    0x08 /* a GTP-U G-PDU header was crossed; teid is valid */
#define CLS_F_VLAN   0x10 /* the outer Ethernet frame had a VLAN tag; vlan is valid */

/* The flow key: innermost 5-tuple + DSCP + VNI + TEID + outer VLAN. 48 bytes.
 * The DSCP shares the VNI's word: a VNI is 24 bits, so the key keeps them
 * as four bytes (the VNI as on the wire, then the DSCP) and stays six
 * 64-bit words: no longer compare, hash or mask per frame. */
struct cls_flow_key {
	__u8  src[16];  /* IPv4 in the first 4 bytes, rest zero */
	__u8  dst[16];
	__u8  vni[3];   /* VXLAN network identifier, as on the wire (network byte order) */
	__u8  dscp;     /* DSCP (6 bits) of the innermost IP header: IPv4 TOS >> 2,
	                 * IPv6 traffic class >> 2 (set for every IP frame) */
	__u32 teid;
	__u16 sport;    /* the ports in network byte order, as on the wire: */
	__u16 dport;    /* one 32-bit load fills both */
	__u16 vlan;     /* VLAN ID (12 bits) of the outermost tag */
	__u8  proto;    /* innermost IP protocol / IPv6 next header */
	__u8  flags;    /* CLS_F_* */
};

/* Key of the rule hash map: the key under the rule's mask, and the mask. */
struct cls_rule_key {
	struct cls_flow_key k;
	__u32 mask_id;
	__u32 _pad;
};

enum cls_action {
	CLS_ACT_PASS    = 0,
	CLS_ACT_STEER   = 1, /* cpumap redirect to CPU arg */
	CLS_ACT_XSK     = 2, /* xskmap redirect to slot arg */
	CLS_ACT_DROP    = 3,
	CLS_ACT_FORWARD = 4, /* when overloaded: rewrite to alt node arg, XDP_TX; else pass */
	CLS_ACT_SPREAD  = 5, /* cpumap redirect to cls_cpu_sets[slot].cpu[hash(inner 5-tuple) % n] */
};

struct cls_rule {
	__u32 slot;      /* index in rule_stats */
	__u32 arg;       /* CPU, XSK slot or alt index (CLS_ALT_BY_HASH) */
	__u16 priority;  /* highest wins when several masks match */
	__u8  action;    /* enum cls_action */
	__u8  _pad[5];
};

struct cls_mask {
	struct cls_flow_key m;
	__u32 active;
	__u32 _pad;
};

struct cls_alt {
	__u8 mac[6];
	__u8 family;     /* 4 or 6; 0 = empty */
	__u8 _pad;
	__u8 ip[16];     /* IPv4 in the first 4 bytes */
};

struct cls_config {
	__u32 load_flag;      /* set by user space: this host is overloaded */
	__u32 alt_count;      /* alt entries in use (0..CLS_MAX_ALT) */
	__u64 rate_threshold; /* packets per window per CPU above which the CPU is overloaded; 0 = off */
	__u64 window_ns;      /* rate window */
	__u32 default_action; /* unmatched encapsulated flows: CLS_ACT_PASS or CLS_ACT_FORWARD */
	__u16 vxlan_port;     /* UDP port of VXLAN (4789) */
	__u16 gtpu_port;      /* UDP port of GTP-U (2152) */
	__u64 saturation_threshold; /* packets per window per CPU above which even prioritised
	                             * flows are forwarded (the excess the CPU cannot take); 0 = never */
	__u32 mask_bits;      /* bit m set: cls_masks[m] is in use (the program looks up only those) */
	__u32 gen;            /* rule generation: bumped by user space after every rule or mask
	                       * change (written after the change), so flow cache entries of
	                       * an older generation are never used */
	__u32 general_only;   /* 1: every frame through the general parser, the fast lane
	                       * off (to check one against the other; diagnosis) */
	__u32 load_watch;     /* 1 when load_flag, rate_threshold or saturation_threshold
	                       * is set (derived by user space): the one word a frame
	                       * tests before it looks at any overload signal */
};

/* Per-CPU exact-match flow cache: the result of the tuple-space search for
 * one flow key, direct-mapped by a hash of the key (cls_flow_cache). Valid
 * only while `gen` equals cls_config.gen. The frames an entry answers are
 * counted in the entry itself (the line the hit has already read), not in
 * the rule's statistics nor, when the rule drops, in the drop total: they
 * move there when the entry is refilled, and user space adds the entries'
 * counts when it reads them. 96 bytes. */
#define CLS_CACHE_SLOTS 512
struct cls_cache_ent {
	struct cls_flow_key k;
	__u32 gen;            /* cls_config.gen the result was computed in (0: empty) */
	__u32 found;          /* 1: `rule` matched; 0: no rule matches the key */
	struct cls_rule rule; /* copy of the winning rule's value */
	__u64 hits;           /* frames this entry answered since it was filled */
	__u64 bytes;          /* their bytes */
	__u64 seen_jiffies;   /* jiffies of the last hit that updated the rule's last_seen_ns */
};

/* The CPUs a CLS_ACT_SPREAD rule spreads its flows over (cls_cpu_sets[rule slot]). */
struct cls_cpu_set {
	__u32 n;                    /* CPUs in use, 1..CLS_MAX_SPREAD */
	__u32 cpu[CLS_MAX_SPREAD];  /* cpumap keys */
};

/* Per-CPU rate window. */
struct cls_rate {
	__u64 window_start;
	__u64 count;
	__u64 last_count;
	__u64 _pad;
};

/* Per-CPU per-rule statistics: the frames searched for (a cache miss) and
 * those of refilled cache entries (the rest are in live cache entries). */
struct cls_stat {
	__u64 packets;
	__u64 bytes;
	__u64 forwarded;
	__u64 last_seen_ns;  /* CLOCK_MONOTONIC, at tick resolution */
	__u64 seen_jiffies;  /* jiffies when last_seen_ns was read */
	__u32 gen;           /* cls_config.gen the rule was installed in: a cache entry
	                      * of an older generation holds another rule's frames
	                      * (the slot's previous owner) and is not added */
	__u32 _pad;
};

/* Per-CPU totals, indexed by enum cls_total. */
struct cls_total_ctr {
	__u64 packets;
	__u64 bytes;
};

enum cls_total {
	CLS_T_PASS_UNMATCHED = 0, /* IP flow, no rule: passed */
	CLS_T_PASS_RULE,          /* rule with action pass (or forward, not overloaded) */
	CLS_T_STEER,              /* redirected into the cpumap */
	CLS_T_STEER_MISS,         /* cpumap entry absent: passed */
	CLS_T_XSK,                /* redirected into the xskmap */
	CLS_T_XSK_MISS,           /* no socket in the slot: passed */
	CLS_T_DROP,               /* dropped by a rule (the frames the flow cache answered: in their entry until it is refilled) */
	CLS_T_FORWARD,            /* rewritten and sent back out (XDP_TX) */
	CLS_T_FORWARD_NO_ALT,     /* should have been forwarded, no usable alt node: passed */
	CLS_T_MALFORMED,          /* truncated or inconsistent headers: passed, never matched */
	CLS_T_NOT_IP,             /* not IP (ARP, ...), or a GTP-U message that is not a G-PDU: passed */
	CLS_T_OVERLOADED,         /* classified while the host/CPU was overloaded (a subset of the above) */
	CLS_T_MAX,
};

/* Slots of cls_noop_count: the benchmark's two no-op anchors, one per verdict,
 * so a classifier cell is compared with the anchor that does to the frame
 * what the classifier did (drop, or pass to the kernel stack). */
#define CLS_NOOP_DROP 0 /* cls_noop: counts, XDP_DROP */
#define CLS_NOOP_PASS 1 /* cls_noop_pass: counts, XDP_PASS */
#define CLS_NOOP_SLOTS 2

#endif
