// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* detpath classify: XDP classifier for encapsulated traffic.
 *
 * Parses Ethernet [802.1Q/802.1ad x2] / IPv4|IPv6 / UDP|TCP, then
 * VXLAN / Ethernet [VLAN] / IP / L4, then GTP-U [ext headers] / IP / L4,
 * builds the flow key from the innermost 5-tuple and DSCP + VNI + TEID +
 * outer VLAN (the DSCP is the innermost IP header's: the application's own
 * marking, which a tunnel's outer header need not copy),
 * looks it up under each active mask (tuple-space search, highest priority
 * wins; a per-CPU flow cache in front) and applies the rule's action. The
 * three shapes nearly all traffic has (untagged IPv4/UDP, bare or in VXLAN
 * or GTP-U) take a straight-line fast lane (fast_parse); everything else
 * the general parser (parse_frame), out of line. Frames that are truncated or whose
 * lengths disagree are never matched (CLS_T_MALFORMED, XDP_PASS). Non-IP
 * frames pass untouched. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "classify.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The configuration: a global variable in its own section, which libbpf
 * makes a one-entry array map named `.data.config` (user space writes the
 * whole value). The program reads it in place: its address is a constant,
 * no lookup on the path of every frame. */
struct cls_config cls_config SEC(".data.config");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CLS_MAX_MASKS);
	__type(key, __u32);
	__type(value, struct cls_mask);
} cls_masks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CLS_MAX_RULES);
	__type(key, struct cls_rule_key);
	__type(value, struct cls_rule);
} cls_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CLS_MAX_RULES);
	__type(key, __u32);
	__type(value, struct cls_stat);
} cls_rule_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CLS_T_MAX);
	__type(key, __u32);
	__type(value, struct cls_total_ctr);
} cls_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cls_rate);
} cls_rate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CLS_MAX_ALT);
	__type(key, __u32);
	__type(value, struct cls_alt);
} cls_alt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, CLS_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cls_cpus SEC(".maps");

/* Redirects per target CPU (steer and spread rules), per receiving CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CLS_MAX_CPUS);
	__type(key, __u32);
	__type(value, __u64);
} cls_cpu_hits SEC(".maps");

/* The CPU set of each spread rule, by rule slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CLS_MAX_RULES);
	__type(key, __u32);
	__type(value, struct cls_cpu_set);
} cls_cpu_sets SEC(".maps");

/* The exact-match flow cache in front of the tuple-space search (per CPU:
 * no sharing, no atomics, and an array: the lookup is inlined, no helper
 * call and no jhash). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CLS_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct cls_cache_ent);
} cls_flow_cache SEC(".maps");

/* Flow cache, per CPU: [0] the hits of entries since evicted (an entry
 * counts its own hits while it lives: no counter on the hit path), [1]
 * misses (frames searched with rules in use). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} cls_cache_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, CLS_MAX_XSK);
	__type(key, __u32);
	__type(value, __u32);
} cls_xsks SEC(".maps");

/* Headers we parse lie in the first 2 KiB of a frame. */
#define OFF_MAX 0x7ff

#define ETH_P_8021Q_BE  bpf_htons(0x8100)
#define ETH_P_8021AD_BE bpf_htons(0x88a8)
#define ETH_P_IP_BE     bpf_htons(0x0800)
#define ETH_P_IPV6_BE   bpf_htons(0x86dd)

enum { P_OK = 0, P_NOT_IP = 1, P_BAD = 2 };

/* What parsing one IP layer found. */
struct l3 {
	__u32 ip_off;    /* offset of the IP header */
	__u32 ip_end;    /* offset one past the IP packet (by its length field) */
	__u32 l4_off;    /* offset of the L4 header, if any */
	__u32 l4_end;    /* one past the UDP datagram (by its length field) */
	__u16 dport;
	__u8  proto;
	__u8  has_l4;    /* TCP/UDP header present and checked */
	__u8  v6;
	__u8  frag;      /* fragmented (any fragment) */
};

/* Pointer to `len` bytes at `off`, or NULL when they are not in the frame. */
static __always_inline void *hdr(void *data, void *data_end, __u32 off, __u32 len)
{
	if (off > OFF_MAX)
		return NULL;
	/* Mask in the register the pointer is computed from, where the
	 * compiler cannot drop it as redundant: the verifier needs the bound. */
	__u64 o = off;
	asm volatile("%0 &= 0x7ff" : "+r"(o));
	void *p = data + o;
	if (p + len > data_end)
		return NULL;
	return p;
}

/* Parses the IP header at o->ip_off (and the TCP/UDP header after it) into
 * `k`, overwriting the addresses, protocol and ports found by an outer layer.
 * The IP packet must end at or before o->ip_end (the limit). A global
 * function: the verifier checks it once, not once per call site (inlined
 * three times, the verifier gives up on the program). */
__noinline int parse_ip(struct xdp_md *ctx, __u32 ethertype, struct cls_flow_key *k, struct l3 *o)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 l4_off;

	if (!k || !o)
		return P_BAD;
	__u32 off = o->ip_off;   /* in: where the IP header starts */
	__u32 limit = o->ip_end; /* in: where the enclosing packet ends */
	__u8 proto;
	int frag_later = 0;

	o->ip_off = off;
	o->has_l4 = 0;
	o->frag = 0;
	__builtin_memset(k->src, 0, 32);
	k->sport = 0;
	k->dport = 0;
	k->flags &= ~(CLS_F_IPV6 | CLS_F_L4);

	if (ethertype == ETH_P_IP_BE) {
		__u8 *ip = hdr(data, data_end, off, 20);
		if (!ip)
			return P_BAD;
		if ((ip[0] >> 4) != 4)
			return P_BAD;
		__u32 ihl = (ip[0] & 0x0f) * 4;
		if (ihl < 20)
			return P_BAD;
		__u32 tot = ((__u32)ip[2] << 8) | ip[3];
		if (tot < ihl || off + tot > limit)
			return P_BAD;
		__u16 fo = ((__u16)(ip[6] & 0x3f) << 8) | ip[7]; /* MF + offset */
		if (fo & 0x1fff)
			frag_later = 1;
		if (fo)
			o->frag = 1;
		proto = ip[9];
		k->dscp = ip[1] >> 2; /* the TOS byte without its two ECN bits */
		__builtin_memcpy(k->src, ip + 12, 4);
		__builtin_memcpy(k->dst, ip + 16, 4);
		o->v6 = 0;
		o->ip_end = off + tot;
		l4_off = off + ihl;
	} else if (ethertype == ETH_P_IPV6_BE) {
		__u8 *ip6 = hdr(data, data_end, off, 40);
		if (!ip6)
			return P_BAD;
		if ((ip6[0] >> 4) != 6)
			return P_BAD;
		__u32 plen = ((__u32)ip6[4] << 8) | ip6[5];
		if (plen == 0 || off + 40 + plen > limit)
			return P_BAD;
		proto = ip6[6];
		/* The traffic class straddles the first two bytes; its top six bits are the DSCP. */
		k->dscp = ((ip6[0] & 0x0f) << 2) | (ip6[1] >> 6);
		__builtin_memcpy(k->src, ip6 + 8, 16);
		__builtin_memcpy(k->dst, ip6 + 24, 16);
		k->flags |= CLS_F_IPV6;
		o->v6 = 1;
		o->ip_end = off + 40 + plen;
		l4_off = off + 40;
		for (int i = 0; i < CLS_MAX_V6_EXT; i++) {
			__u32 elen;
			if (proto == 0 || proto == 43 || proto == 60) {
				__u8 *e = hdr(data, data_end, l4_off, 2);
				if (!e)
					return P_BAD;
				proto = e[0];
				elen = ((__u32)e[1] + 1) * 8;
			} else if (proto == 44) {
				__u8 *e = hdr(data, data_end, l4_off, 8);
				if (!e)
					return P_BAD;
				proto = e[0];
				o->frag = 1;
				if ((((__u16)e[2] << 8) | e[3]) & 0xfff8)
					frag_later = 1;
				elen = 8;
			} else if (proto == 51) {
				__u8 *e = hdr(data, data_end, l4_off, 2);
				if (!e)
					return P_BAD;
				proto = e[0];
				elen = ((__u32)e[1] + 2) * 4;
			} else {
				break;
			}
			l4_off += elen;
			if (l4_off > o->ip_end)
				return P_BAD;
		}
		if (proto == 0 || proto == 43 || proto == 60 || proto == 44 || proto == 51)
			return P_BAD; /* more extension headers than we follow */
	} else {
		return P_NOT_IP;
	}

	k->proto = proto;
	o->proto = proto;
	o->l4_off = l4_off;
	o->l4_end = o->ip_end;
	if (frag_later)
		return P_OK; /* no L4 header in this fragment */

	__u32 ports;
	if (proto == IPPROTO_UDP) {
		__u8 *u = hdr(data, data_end, l4_off, 8);
		if (!u)
			return P_BAD;
		__u32 ulen = ((__u32)u[4] << 8) | u[5];
		if (!o->frag) {
			if (ulen < 8 || l4_off + ulen > o->ip_end)
				return P_BAD;
			o->l4_end = l4_off + ulen;
		}
		ports = *(__u32 *)u;
	} else if (proto == IPPROTO_TCP) {
		__u8 *t = hdr(data, data_end, l4_off, 20);
		if (!t)
			return P_BAD;
		__u32 doff = (t[12] >> 4) * 4;
		if (doff < 20 || l4_off + doff > o->ip_end)
			return P_BAD;
		ports = *(__u32 *)t;
	} else {
		return P_OK;
	}
	/* Both ports as on the wire, from one load (little-endian: the source
	 * port is the low half). */
	k->sport = (__u16)ports;
	k->dport = (__u16)(ports >> 16);
	o->dport = bpf_ntohs(k->dport);
	o->has_l4 = 1;
	k->flags |= CLS_F_L4;
	return P_OK;
}

/* Skips up to CLS_MAX_VLAN tags starting at the ethertype at `*off - 2`. */
static __always_inline int skip_vlans(void *data, void *data_end, __u32 *off, __u16 *proto,
				      struct cls_flow_key *k, int record)
{
	for (int i = 0; i < CLS_MAX_VLAN; i++) {
		if (*proto != ETH_P_8021Q_BE && *proto != ETH_P_8021AD_BE)
			break;
		__u8 *v = hdr(data, data_end, *off, 4);
		if (!v)
			return P_BAD;
		if (record && i == 0) {
			k->vlan = (((__u16)v[0] << 8) | v[1]) & 0x0fff;
			k->flags |= CLS_F_VLAN;
		}
		*proto = *(__u16 *)(v + 2);
		*off += 4;
	}
	if (*proto == ETH_P_8021Q_BE || *proto == ETH_P_8021AD_BE)
		return P_BAD; /* more tags than we follow */
	return P_OK;
}

/* Parses a GTP-U header at `off`; on success *inner is the offset of the
 * T-PDU and *end one past it. */
static __always_inline int parse_gtp(void *data, void *data_end, __u32 off, __u32 limit,
				     struct cls_flow_key *k, struct l3 *o)
{
	__u8 *g = hdr(data, data_end, off, 8);
	if (!g)
		return P_BAD;
	__u8 fl = g[0];
	if ((fl >> 5) != 1 || !(fl & 0x10))
		return P_BAD; /* not GTPv1, or GTP' */
	__u32 glen = ((__u32)g[2] << 8) | g[3];
	if (off + 8 + glen > limit)
		return P_BAD;
	if (g[1] != 0xff)
		return P_NOT_IP; /* echo, error indication, end marker: no user flow */
	k->teid = ((__u32)g[4] << 24) | ((__u32)g[5] << 16) | ((__u32)g[6] << 8) | g[7];
	k->flags |= CLS_F_GTP;
	__u32 p = off + 8;
	__u32 end = off + 8 + glen;
	if (fl & 0x07) {
		__u8 *opt = hdr(data, data_end, p, 4);
		if (!opt)
			return P_BAD;
		__u8 next = (fl & 0x04) ? opt[3] : 0;
		p += 4;
		for (int i = 0; i < CLS_MAX_GTP_EXT; i++) {
			if (next == 0)
				break;
			__u8 *e = hdr(data, data_end, p, 4);
			if (!e)
				return P_BAD;
			__u32 elen = (__u32)e[0] * 4;
			if (elen == 0)
				return P_BAD;
			__u8 *last = hdr(data, data_end, p + elen - 1, 1);
			if (!last)
				return P_BAD;
			next = *last;
			p += elen;
		}
		if (next != 0)
			return P_BAD; /* more extension headers than we follow */
	}
	if (p >= end)
		return P_BAD;
	o->ip_off = p;
	o->ip_end = end;
	return P_OK;
}


/* Whether the IPv4/UDP header pair at `ip`, whose packet may take at most
 * `room` bytes (room >= 28), is IPv4 without options, not a fragment, UDP,
 * with lengths that agree; its UDP length in *ulen. The caller has checked
 * that the 28 bytes are in the frame. Word tests: version and IHL in one
 * byte; MF, fragment offset and protocol in one 32-bit word (DF may be
 * set); the four length bounds as two unsigned compares (a length under
 * its minimum wraps). The answer is the compares themselves, not a length
 * the caller tests again. */
static __always_inline int ip4_udp_ok(const __u8 *ip, __u32 room, __u32 *ulen)
{
	__u32 w0 = *(const __u32 *)ip;       /* version+IHL, TOS, total length */
	__u32 w1 = *(const __u32 *)(ip + 6); /* flags+offset, TTL, protocol */
	if ((w0 & 0xff) != 0x45 || (w1 & bpf_htonl(0x3fff00ff)) != bpf_htonl(IPPROTO_UDP))
		return 0;
	__u32 t = bpf_ntohs((__u16)(w0 >> 16));
	*ulen = bpf_ntohs(*(const __u16 *)(ip + 24));
	/* 28 <= t <= room, and 8 <= ulen <= t - 20 */
	return t - 28 <= room - 28 && *ulen - 8 <= t - 28;
}

/* The fast lane's flow key: the checked innermost IPv4/UDP header pair at
 * `ip`, the tunnel word (the key's vni and teid; its dscp byte zero) and
 * the flags. The DSCP is the innermost header's, as the general parser
 * takes it: one byte load more per frame. Inlined once per shape, so each
 * reads its headers at fixed offsets. */
static __always_inline int fast_key(struct cls_flow_key *k, const __u8 *ip, __u64 tunnel, __u8 flags)
{
	__u64 *kw = (__u64 *)k;
	kw[0] = *(__u32 *)(ip + 12);
	kw[1] = 0;
	kw[2] = *(__u32 *)(ip + 16);
	kw[3] = 0;
	kw[4] = tunnel | (__u64)(ip[1] >> 2) << 24; /* the dscp byte of the word (little-endian) */
	kw[5] = (__u64)*(__u32 *)(ip + 20) | (__u64)IPPROTO_UDP << 48 | (__u64)flags << 56; /* ports as on the wire */
	return P_OK;
}

/* The fast lane: the three shapes nearly every frame has, parsed straight
 * through with word loads into the flow key, no loops and no calls:
 *   Ethernet / IPv4 / UDP (to neither tunnel port)
 *   Ethernet / IPv4 / UDP:vxlan / VXLAN / Ethernet / IPv4 / UDP (not to the GTP-U port)
 *   Ethernet / IPv4 / UDP:gtpu / GTP-U G-PDU [one 4-byte extension] / IPv4 / UDP
 * with no VLAN tag, no IP option, no fragment, no GTP-U sequence or N-PDU
 * number (each shape with its headers at fixed offsets: a GTP-U frame with
 * or without its extension is two shapes), and every length checked as
 * the general parser checks it. Anything else returns -1 with nothing
 * decided; the general parser then parses the frame (and decides). Fills
 * only the key: the outer headers' shape is fixed (fast_outer), described
 * only for the rare frame that is forwarded. */
static __always_inline int fast_parse(void *data, void *data_end, const struct cls_config *cfg,
				      struct cls_flow_key *k)
{
	__u8 *eth = data;
	__u32 len = data_end - data;
	if (eth + 14 + 28 > (__u8 *)data_end || *(__u16 *)(eth + 12) != ETH_P_IP_BE)
		return -1;
	__u8 *ip = eth + 14;
	__u32 ulen, in_ulen; /* in_ulen: the inner UDP length, checked and not needed after */
	if (!ip4_udp_ok(ip, len - 14, &ulen))
		return -1;
	__u16 dport = bpf_ntohs(*(__u16 *)(ip + 22));

	if (dport == cfg->vxlan_port) {
		/* VXLAN (8) + Ethernet (14) + IPv4 (20) + UDP (8) after the outer UDP */
		__u8 *vx = ip + 28;
		if (vx + 50 > (__u8 *)data_end || !(vx[0] & 0x08) || *(__u16 *)(vx + 20) != ETH_P_IP_BE)
			return -1;
		if (ulen < 8 + 22 + 28)
			return -1;
		__u8 *in = vx + 22;
		if (!ip4_udp_ok(in, ulen - 8 - 22, &in_ulen) || bpf_ntohs(*(__u16 *)(in + 22)) == cfg->gtpu_port)
			return -1;
		/* The VNI's three bytes as on the wire; the reserved byte after them masked off */
		return fast_key(k, in, *(__u32 *)(vx + 4) & bpf_htonl(0xffffff00), CLS_F_L4 | CLS_F_VXLAN);
	}
	if (dport == cfg->gtpu_port) {
		/* GTP-U G-PDU (8), bare or with one 4-byte extension (+ 8), + IPv4 (20) +
		 * UDP (8); any other message type (a signalling message) or flags (GTP',
		 * a sequence or N-PDU number, a longer or second extension) go to the
		 * general parser. */
		__u8 *g = ip + 28;
		if (g + 16 + 28 > (__u8 *)data_end)
			return -1;
		__u32 w0 = *(__u32 *)g; /* flags, message type, length */
		__u32 glen = bpf_ntohs((__u16)(w0 >> 16));
		if (glen + 16 > ulen) /* 8 + glen > ulen - 8 */
			return -1;
		__u64 teid = (__u64)bpf_ntohl(*(__u32 *)(g + 4)) << 32;
		__u32 fl_type = w0 & bpf_htonl(0xffff0000);
		if (fl_type == bpf_htonl(0x30ff0000)) { /* GTPv1, no optional field */
			if (glen < 28 || !ip4_udp_ok(g + 8, glen, &in_ulen))
				return -1;
			return fast_key(k, g + 8, teid, CLS_F_L4 | CLS_F_GTP);
		}
		/* E flag, next extension type set, one extension of 4 bytes (length 1, next 0) */
		if (fl_type != bpf_htonl(0x34ff0000) || g[11] == 0 ||
		    (*(__u32 *)(g + 12) & bpf_htonl(0xff0000ff)) != bpf_htonl(0x01000000))
			return -1;
		if (glen < 8 + 28 || !ip4_udp_ok(g + 16, glen - 8, &in_ulen))
			return -1;
		return fast_key(k, g + 16, teid, CLS_F_L4 | CLS_F_GTP);
	}
	return fast_key(k, ip, 0, CLS_F_L4);
}

/* The outer headers of a frame the fast lane took (Ethernet / IPv4 without
 * options / UDP), as the general parser describes them: for forward(). */
static __always_inline void fast_outer(void *data, void *data_end, struct l3 *o)
{
	__u8 *p = data;
	__builtin_memset(o, 0, sizeof(*o));
	o->ip_off = 14;
	o->l4_off = 34;
	o->proto = IPPROTO_UDP;
	o->has_l4 = 1;
	if (p + 42 > (__u8 *)data_end)
		return; /* cannot happen: the fast lane checked these 42 bytes */
	o->ip_end = 14 + bpf_ntohs(*(__u16 *)(p + 16));
	o->l4_end = 34 + bpf_ntohs(*(__u16 *)(p + 38));
	o->dport = bpf_ntohs(*(__u16 *)(p + 36));
}

/* Adds `n` frames of `bytes` bytes to total `what`. */
static __always_inline void count_n(__u32 what, __u64 n, __u64 bytes)
{
	struct cls_total_ctr *c = bpf_map_lookup_elem(&cls_totals, &what);
	if (c) {
		c->packets += n;
		c->bytes += bytes;
	}
}

static __always_inline void count(__u32 what, __u64 bytes)
{
	count_n(what, 1, bytes);
}

static __always_inline __u32 key_hash(const struct cls_flow_key *k)
{
	const __u32 *w = (const __u32 *)k;
	__u32 h = 0x9e3779b9;
	for (int i = 0; i < (int)(sizeof(*k) / 4); i++) {
		h ^= w[i];
		h *= 0x01000193;
		h ^= h >> 15;
	}
	return h;
}

static __always_inline __u16 csum_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~(__u16)s;
}

/* Rewrites the outer destination MAC and IP to the alt node and returns
 * XDP_TX, or -1 when no alt node fits (the caller passes the frame). */
__noinline int forward(struct xdp_md *ctx, const struct cls_flow_key *k, __u32 arg, __u32 n,
		       const struct l3 *outer)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (!k || !outer)
		return -1;
	if (n == 0 || n > CLS_MAX_ALT)
		return -1;
	__u32 idx = arg == CLS_ALT_BY_HASH ? key_hash(k) % n : arg;
	struct cls_alt *alt = bpf_map_lookup_elem(&cls_alt, &idx);
	if (!alt || alt->family != (outer->v6 ? 6 : 4))
		return -1;

	__u8 *eth = hdr(data, data_end, 0, 14);
	if (!eth)
		return -1;
	__u32 daddr_off = outer->ip_off + (outer->v6 ? 24 : 16);
	__u32 alen = outer->v6 ? 16 : 4;

	/* One's complement difference of the address change (RFC 1624), for the
	 * IPv4 header checksum and the L4 pseudo-header. */
	__u32 old[4] = {}, new[4] = {};
	if (outer->v6) {
		__u8 *d6 = hdr(data, data_end, daddr_off, 16);
		if (!d6)
			return -1;
		__builtin_memcpy(old, d6, 16);
	} else {
		__u8 *d4 = hdr(data, data_end, daddr_off, 4);
		if (!d4)
			return -1;
		__builtin_memcpy(old, d4, 4);
	}
	__builtin_memcpy(new, alt->ip, 16);
	if (alen == 4) {
		new[1] = 0;
		new[2] = 0;
		new[3] = 0;
	}
	__s64 diff = bpf_csum_diff(old, 16, new, 16, 0);
	if (diff < 0)
		return -1;

	if (outer->v6) {
		__u8 *d6 = hdr(data, data_end, daddr_off, 16);
		if (!d6)
			return -1;
		__builtin_memcpy(d6, alt->ip, 16);
	} else {
		__u8 *ip4 = hdr(data, data_end, outer->ip_off, 20);
		if (!ip4)
			return -1;
		__u16 *ck = (__u16 *)(ip4 + 10);
		*ck = csum_fold((__u64)(__u16)~*ck + (__u32)diff);
		__builtin_memcpy(ip4 + 16, alt->ip, 4);
	}

	/* The outer L4 checksum covers the pseudo-header. */
	if (outer->has_l4 && !outer->frag) {
		__u32 coff = outer->l4_off + (outer->proto == IPPROTO_UDP ? 6 : 16);
		__u16 *cs = hdr(data, data_end, coff, 2);
		if (cs && (outer->proto == IPPROTO_TCP || *cs != 0)) {
			__u16 nc = csum_fold((__u64)(__u16)~*cs + (__u32)diff);
			if (outer->proto == IPPROTO_UDP && nc == 0)
				nc = 0xffff;
			*cs = nc;
		}
	}

	__builtin_memcpy(eth + 6, eth, 6); /* we are the sender now */
	__builtin_memcpy(eth, alt->mac, 6);
	return XDP_TX;
}

/* Looks the key up under every mask in use (bits: no lookup for the
 * others); returns the highest-priority rule, or NULL. */
static __always_inline struct cls_rule *lookup_rule(const struct cls_flow_key *k, __u32 bits)
{
	struct cls_rule *best = NULL;

#pragma unroll
	for (__u32 m = 0; m < CLS_MAX_MASKS; m++) {
		if (!(bits & (1u << m)))
			continue;
		__u32 mi = m;
		struct cls_mask *mask = bpf_map_lookup_elem(&cls_masks, &mi);
		if (!mask)
			continue;
		/* Every byte of the key is written: no zeroing first. */
		struct cls_rule_key rk;
		const __u64 *kw = (const __u64 *)k;
		const __u64 *mw = (const __u64 *)&mask->m;
		__u64 *rw = (__u64 *)&rk.k;
#pragma unroll
		for (int i = 0; i < (int)(sizeof(*k) / 8); i++)
			rw[i] = kw[i] & mw[i];
		rk.mask_id = m;
		rk._pad = 0;
		struct cls_rule *r = bpf_map_lookup_elem(&cls_rules, &rk);
		if (r && (!best || r->priority > best->priority))
			best = r;
		if (!(bits >> (m + 1)))
			break; /* no mask in use above this one */
	}
	return best;
}

/* Slot of a flow key in the flow cache: its six 64-bit words folded by
 * xor (the destination address turned half a word, so a flow and its
 * reverse differ) and mixed by one multiply, whose top bits are the slot:
 * one multiply on the path to the entry, not six in a chain. The entry
 * holds the whole key, so a collision costs a search, never a wrong answer. */
static __always_inline __u32 cache_slot(const struct cls_flow_key *k)
{
	const __u64 *w = (const __u64 *)k;
	__u64 h = (w[0] ^ (w[2] << 32 | w[2] >> 32) ^ w[1] ^ w[3] ^ w[4] ^ w[5]) * 0x9e3779b97f4a7c15ull;
	return (__u32)(h >> 55) & (CLS_CACHE_SLOTS - 1); /* 9 bits: 512 slots */
}

static __always_inline void count_cache(__u32 what, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&cls_cache_stats, &what);
	if (c)
		*c += n;
}

/* Reads the coarse clock (CLOCK_MONOTONIC at tick resolution) into the
 * rule's last_seen_ns, at most once a tick: jiffies is one load (the
 * verifier inlines it), the coarse clock a helper call. */
static __always_inline void stat_seen(struct cls_stat *st, __u64 jiffies)
{
	if (jiffies != st->seen_jiffies) {
		st->seen_jiffies = jiffies;
		st->last_seen_ns = bpf_ktime_get_coarse_ns();
	}
}

/* Entry `e` (filled with a rule) seen at `jiffies`, and so its rule (the
 * statistics' last_seen_ns): from a miss, and from a hit once a tick. */
static __always_inline void entry_seen(struct cls_cache_ent *e, __u64 jiffies)
{
	e->seen_jiffies = jiffies;
	__u32 slot = e->rule.slot;
	struct cls_stat *st = bpf_map_lookup_elem(&cls_rule_stats, &slot);
	if (st)
		stat_seen(st, jiffies);
}

/* The miss path of the flow cache: moves the entry's counts out, searches
 * the rules for `k` and fills the entry with the result (the key, the
 * generation it was computed in, a copy of the winning rule); counts this
 * frame in the rule's statistics. Returns 1 when a rule matched. The
 * counts leave the entry before they are added elsewhere (a reader adding
 * both may miss them for a moment, never count them twice): the hits to
 * the evicted entries' total, the frames to the statistics of the rule the
 * entry found (unless that slot has since been given to a rule installed
 * after the entry was filled) and, when that rule drops, to the drop
 * total. A global function: the search (a lookup per mask) stays out of
 * the hit path's way, and is verified once. */
__noinline int cache_fill(const struct cls_flow_key *k, struct cls_cache_ent *e, __u32 bits, __u32 gen, __u32 len)
{
	if (!k || !e)
		return 0;
	count_cache(1, 1);
	__u64 hits = e->hits;
	__u64 bytes = e->bytes;
	e->hits = 0;
	e->bytes = 0;
	count_cache(0, hits);
	if (e->found && hits) {
		__u32 old = e->rule.slot;
		struct cls_stat *st = bpf_map_lookup_elem(&cls_rule_stats, &old);
		if (st && e->gen >= st->gen) {
			st->packets += hits;
			st->bytes += bytes;
		}
		if (e->rule.action == CLS_ACT_DROP)
			count_n(CLS_T_DROP, hits, bytes);
	}
	struct cls_rule *r = lookup_rule(k, bits);
	e->k = *k;
	e->gen = gen;
	e->found = r != NULL;
	if (!r)
		return 0;
	e->rule = *r;
	__u32 slot = r->slot;
	struct cls_stat *st = bpf_map_lookup_elem(&cls_rule_stats, &slot);
	if (st) {
		st->packets++;
		st->bytes += len;
	}
	entry_seen(e, bpf_jiffies64());
	return 1;
}

/* The rule for key `k`, or NULL: the flow cache, else the tuple-space
 * search, whose result the cache then keeps (the pointer is into this
 * CPU's cache entry). Counts the frame (`len` bytes) for the rule: a hit
 * in the entry (*hit = 1: a dropping rule's frame is then counted for the
 * drop total there too), a miss in the rule's statistics. The generation
 * is read before the search: user space bumps it after a rule change, so
 * an entry computed before the change is never used after it. `v4`: the
 * caller knows the key is IPv4, whose address words 1 and 3 are zero in
 * every IPv4 key (and an entry with the same flags is IPv4 too), so four
 * words decide a hit. An empty entry has generation 0, which user space
 * never writes (gen_after in crates/classify), so the generation test
 * alone keeps it from answering. */
static __always_inline const struct cls_rule *find_rule(const struct cls_flow_key *k, const struct cls_config *cfg, int v4,
							__u64 len, int *hit)
{
	__u32 bits = cfg->mask_bits;
	if (!bits)
		return NULL; /* no rule at all: nothing to search or cache */
	__u32 gen = *(volatile const __u32 *)&cfg->gen;
	__u32 idx = cache_slot(k);
	struct cls_cache_ent *e = bpf_map_lookup_elem(&cls_flow_cache, &idx);
	if (!e)
		return NULL; /* cannot happen: the slot is within the array */
	const __u64 *a = (const __u64 *)k;
	const __u64 *b = (const __u64 *)&e->k;
	__u64 diff = (a[0] ^ b[0]) | (a[2] ^ b[2]) | (a[4] ^ b[4]) | (a[5] ^ b[5]);
	if (!v4)
		diff |= (a[1] ^ b[1]) | (a[3] ^ b[3]);
	if (e->gen == gen && !diff) {
		*hit = 1;
		e->hits++;
		e->bytes += len;
		if (!e->found)
			return NULL;
		__u64 j = bpf_jiffies64();
		if (j != e->seen_jiffies)
			entry_seen(e, j);
		return &e->rule;
	}
	return cache_fill(k, e, bits, gen, len) ? &e->rule : NULL;
}

enum { LOAD_OVERLOADED = 1, LOAD_SATURATED = 2 };

/* The overload signal: the user-space flag, or this CPU's packets in the
 * rate window over the threshold (LOAD_OVERLOADED); over the saturation
 * threshold, even prioritised flows go (LOAD_SATURATED). Reads the clock
 * only when a rate threshold is on. Out of line: the common
 * configuration has none of it. */
static __noinline int load_state(const struct cls_config *cfg)
{
	int state = cfg->load_flag ? LOAD_OVERLOADED : 0;
	__u32 zero = 0;
	if (!(cfg->rate_threshold | cfg->saturation_threshold))
		return state;
	struct cls_rate *rate = bpf_map_lookup_elem(&cls_rate, &zero);
	if (!rate)
		return state;
	__u64 t = bpf_ktime_get_ns();
	if (t - rate->window_start >= cfg->window_ns) {
		rate->last_count = rate->count;
		rate->count = 0;
		rate->window_start = t;
	}
	rate->count++;
	if (cfg->rate_threshold && rate->count > cfg->rate_threshold)
		state |= LOAD_OVERLOADED;
	if (cfg->saturation_threshold && rate->count > cfg->saturation_threshold)
		state |= LOAD_SATURATED;
	return state;
}

/* Hash of the innermost 5-tuple (addresses, ports, protocol): the flows of
 * one tunnel differ there, so they spread. */
static __always_inline __u32 tuple_hash(const struct cls_flow_key *k)
{
	const __u32 *w = (const __u32 *)k;
	__u32 h = 0x9e3779b9 ^ k->proto;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		h ^= w[i];
		h *= 0x01000193;
		h ^= h >> 15;
	}
	h ^= ((__u32)k->sport << 16) | k->dport;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

static __always_inline void count_cpu(__u32 cpu)
{
	__u64 *c = bpf_map_lookup_elem(&cls_cpu_hits, &cpu);
	if (c)
		*c += 1;
}

/* The general parser: every shape the classifier knows (VLAN tags, IPv6
 * and its extension headers, IP options, fragments, TCP, GTP-U extension
 * chains, IPv6 inside tunnels), for the frames the fast lane declines.
 * Fills `k` and `outer` (zeroed by the caller); returns P_OK, P_NOT_IP or P_BAD. A
 * global function: out of the fast lane's way in the instruction cache,
 * and verified once. */
__noinline int parse_frame(struct xdp_md *ctx, __u32 vxlan_port, __u32 gtpu_port, struct cls_flow_key *k,
			   struct l3 *outer)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct l3 cur;
	__u32 off = 14;
	int r;

	if (!k || !outer)
		return P_BAD;
	__u8 *eth = hdr(data, data_end, 0, 14);
	if (!eth)
		return P_BAD;
	__u16 proto = *(__u16 *)(eth + 12);
	if (skip_vlans(data, data_end, &off, &proto, k, 1) != P_OK)
		return P_BAD;
	outer->ip_off = off;
	outer->ip_end = (__u32)(data_end - data);
	r = parse_ip(ctx, proto, k, outer);
	if (r != P_OK)
		return r;
	cur = *outer;

	/* VXLAN: UDP / VXLAN / Ethernet [VLAN] / IP / L4 */
	if (cur.has_l4 && !cur.frag && cur.proto == IPPROTO_UDP && cur.dport == vxlan_port) {
		__u32 voff = cur.l4_off + 8;
		__u8 *vx = hdr(data, data_end, voff, 8);
		if (!vx || !(vx[0] & 0x08) || voff + 8 + 14 > cur.l4_end)
			return P_BAD;
		k->vni[0] = vx[4];
		k->vni[1] = vx[5];
		k->vni[2] = vx[6];
		k->flags |= CLS_F_VXLAN;
		__u32 ioff = voff + 8 + 14;
		__u8 *ieth = hdr(data, data_end, voff + 8, 14);
		if (!ieth)
			return P_BAD;
		__u16 iproto = *(__u16 *)(ieth + 12);
		if (skip_vlans(data, data_end, &ioff, &iproto, k, 0) != P_OK)
			return P_BAD;
		struct l3 in = {};
		in.ip_off = ioff;
		in.ip_end = cur.l4_end;
		r = parse_ip(ctx, iproto, k, &in);
		if (r != P_OK)
			return r;
		cur = in;
	}

	/* GTP-U: UDP / GTP-U [ext] / IP / L4 */
	if (cur.has_l4 && !cur.frag && cur.proto == IPPROTO_UDP && cur.dport == gtpu_port) {
		struct l3 g = {};
		r = parse_gtp(data, data_end, cur.l4_off + 8, cur.l4_end, k, &g);
		if (r != P_OK)
			return r;
		__u8 *v = hdr(data, data_end, g.ip_off, 1);
		if (!v)
			return P_BAD;
		struct l3 in = {};
		in.ip_off = g.ip_off;
		in.ip_end = g.ip_end;
		if (parse_ip(ctx, (v[0] >> 4) == 6 ? ETH_P_IPV6_BE : ETH_P_IP_BE, k, &in) != P_OK)
			return P_BAD; /* a G-PDU carries IP: anything else is malformed */
	}
	return P_OK;
}

SEC("xdp")
int cls_main(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	int r;

	const struct cls_config *cfg = &cls_config;

	/* The fast lane for the common shapes; the general parser for the rest
	 * (or for every frame, when user space turned the fast lane off). Then
	 * the rule, from the flow cache or the search (find_rule), where the
	 * frame is counted for it. */
	struct cls_flow_key k;
	struct l3 outer;
	const struct cls_rule *rule;
	int hit = 0;
	int fast = !cfg->general_only && fast_parse(data, data_end, cfg, &k) == P_OK;
	if (fast) {
		rule = find_rule(&k, cfg, 1, len, &hit);
		/* The common verdict first: a cached dropping rule (its frame
		 * already counted in the entry) with no overload signal configured,
		 * which is what the rest of this function would decide, in a dozen
		 * fewer instructions. */
		if (hit && rule && rule->action == CLS_ACT_DROP && !cfg->load_watch)
			return XDP_DROP;
	} else {
		__builtin_memset(&k, 0, sizeof(k));
		__builtin_memset(&outer, 0, sizeof(outer));
		r = parse_frame(ctx, cfg->vxlan_port, cfg->gtpu_port, &k, &outer);
		if (r != P_OK) {
			count(r == P_NOT_IP ? CLS_T_NOT_IP : CLS_T_MALFORMED, len);
			return XDP_PASS;
		}
		rule = find_rule(&k, cfg, 0, len, &hit);
	}
	int found = rule != NULL;

	/* Overload signal (load_state): looked at only when one is configured. */
	int load = 0;
	if (__builtin_expect(cfg->load_watch != 0, 0)) {
		load = load_state(cfg);
		if (load & LOAD_OVERLOADED)
			count(CLS_T_OVERLOADED, len);
	}
	int overloaded = load & LOAD_OVERLOADED;
	int saturated = load & LOAD_SATURATED;

	int encapsulated = (k.flags & (CLS_F_VXLAN | CLS_F_GTP)) != 0;
	if (!found) {
		if (encapsulated && overloaded && cfg->default_action == CLS_ACT_FORWARD) {
			if (fast)
				fast_outer(data, data_end, &outer);
			r = forward(ctx, &k, CLS_ALT_BY_HASH, cfg->alt_count, &outer);
			if (r == XDP_TX) {
				count(CLS_T_FORWARD, len);
				return XDP_TX;
			}
			count(CLS_T_FORWARD_NO_ALT, len);
			return XDP_PASS;
		}
		count(CLS_T_PASS_UNMATCHED, len);
		return XDP_PASS;
	}

	__u32 slot = rule->slot;
	__u8 action = rule->action;
	__u32 arg = rule->arg;
	/* Forward-when-overloaded rules go to their alternative node while the host
	 * is overloaded. A prioritised flow (any other rule but drop) stays however
	 * overloaded the host is, until this CPU is saturated: then its excess is
	 * forwarded rather than lost. */
	int is_fwd_rule = action == CLS_ACT_FORWARD;
	if (is_fwd_rule ? overloaded : (saturated && action != CLS_ACT_DROP)) {
		if (fast)
			fast_outer(data, data_end, &outer);
		r = forward(ctx, &k, is_fwd_rule ? arg : CLS_ALT_BY_HASH, cfg->alt_count, &outer);
		if (r == XDP_TX) {
			struct cls_stat *st = bpf_map_lookup_elem(&cls_rule_stats, &slot);
			if (st)
				st->forwarded++;
			count(CLS_T_FORWARD, len);
			return XDP_TX;
		}
		count(CLS_T_FORWARD_NO_ALT, len);
		if (is_fwd_rule)
			return XDP_PASS;
	}
	switch (action) {
	case CLS_ACT_DROP:
		if (!hit) /* a cache hit's drop is counted in its entry */
			count(CLS_T_DROP, len);
		return XDP_DROP;
	case CLS_ACT_STEER:
		r = bpf_redirect_map(&cls_cpus, arg, XDP_PASS);
		count(r == XDP_REDIRECT ? CLS_T_STEER : CLS_T_STEER_MISS, len);
		if (r == XDP_REDIRECT)
			count_cpu(arg);
		return r;
	case CLS_ACT_SPREAD: {
		/* Paper 004's fair spreading: the flows of one rule (a tunnel) over its
		 * CPU set, by a hash of their inner headers; one flow, one CPU. */
		struct cls_cpu_set *set = bpf_map_lookup_elem(&cls_cpu_sets, &slot);
		__u32 n = set ? set->n : 0;
		if (n == 0 || n > CLS_MAX_SPREAD) {
			count(CLS_T_STEER_MISS, len);
			return XDP_PASS;
		}
		__u32 i = (__u32)(((__u64)tuple_hash(&k) * n) >> 32);
		if (i >= CLS_MAX_SPREAD)
			i = 0;
		__u32 cpu = set->cpu[i];
		r = bpf_redirect_map(&cls_cpus, cpu, XDP_PASS);
		count(r == XDP_REDIRECT ? CLS_T_STEER : CLS_T_STEER_MISS, len);
		if (r == XDP_REDIRECT)
			count_cpu(cpu);
		return r;
	}
	case CLS_ACT_XSK:
		r = bpf_redirect_map(&cls_xsks, arg, XDP_PASS);
		count(r == XDP_REDIRECT ? CLS_T_XSK : CLS_T_XSK_MISS, len);
		return r;
	default:
		count(CLS_T_PASS_RULE, len);
		return XDP_PASS;
	}
}

/* The anchors of the benchmark: each counts every frame (its own slot,
 * CLS_NOOP_*) and returns one verdict. cls_noop drops, as the classifier
 * does with a dropping rule; cls_noop_pass passes to the kernel stack, as the
 * classifier does with no rule (that cell's cost is mostly the stack's). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CLS_NOOP_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} cls_noop_count SEC(".maps");

static __always_inline void noop_count(__u32 slot)
{
	__u64 *c = bpf_map_lookup_elem(&cls_noop_count, &slot);
	if (c)
		*c += 1;
}

SEC("xdp")
int cls_noop(struct xdp_md *ctx)
{
	noop_count(CLS_NOOP_DROP);
	return XDP_DROP;
}

SEC("xdp")
int cls_noop_pass(struct xdp_md *ctx)
{
	noop_count(CLS_NOOP_PASS);
	return XDP_PASS;
}

/* The benchmark's generator: run with BPF_PROG_RUN live frames, sends its frame out. */
SEC("xdp")
int cls_gen(struct xdp_md *ctx)
{
	return XDP_TX;
}

/* Gives the peer of a veth an XDP program, which veth needs to deliver XDP_TX frames. */
SEC("xdp")
int cls_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
