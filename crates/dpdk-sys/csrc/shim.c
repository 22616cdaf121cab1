/* detpath-dpdk-sys: a thin C shim over Debian's DPDK (22.11).
 *
 * DPDK's fast-path functions (rte_eth_rx_burst, rte_pktmbuf_alloc, ...) are
 * static inline in its headers, so Rust cannot call them directly; and the
 * structures the setup functions take change between releases. This file
 * wraps both behind a few functions with plain C types, so the Rust side
 * declares them by hand and depends on no DPDK struct layout.
 *
 * Every function returns a negative errno-style value on failure unless
 * stated otherwise. */
#define _GNU_SOURCE /* fopencookie */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_version.h>

/* Where the C libraries' own messages go.
 *
 * The EAL logs through one FILE*; the af_xdp PMD (loaded by the EAL from its
 * plugin directory) brings Debian's libxdp and libbpf, which print through
 * callbacks taking a va_list. Rust cannot take a va_list, so this file owns
 * one FILE* that writes every line to a log file descriptor and, when asked,
 * to stderr too, and points all three libraries at it. */
static int lib_log_fd = -1;
static int lib_log_tee;
static FILE *lib_log;

static ssize_t lib_log_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	if (lib_log_fd >= 0 && write(lib_log_fd, buf, n) < 0)
		return -1;
	if (lib_log_tee && write(STDERR_FILENO, buf, n) < 0)
		return -1;
	return (ssize_t)n;
}

static int lib_log_vprint(int level, const char *fmt, va_list ap)
{
	/* Both libraries number their levels WARN 0, INFO 1, DEBUG 2; their own
	 * default printers drop DEBUG (every relocation), and so does this. */
	if (level > 1)
		return 0;
	return lib_log ? vfprintf(lib_log, fmt, ap) : vfprintf(stderr, fmt, ap);
}

/* libbpf_set_print / libxdp_set_print, looked up in the copies the PMD
 * loaded (RTLD_NOLOAD: never load a library just to silence it). Their
 * print-function types are int (*)(enum level, const char *, va_list). */
typedef int (*lib_print_fn)(int, const char *, va_list);
static void lib_log_hook(const char *lib, const char *setter)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return;
	void *(*set)(lib_print_fn) = (void *(*)(lib_print_fn))dlsym(h, setter);
	if (set)
		set(lib_log_vprint);
	dlclose(h);
}

static void lib_log_hook_all(void)
{
	if (!lib_log)
		return;
	rte_openlog_stream(lib_log);
	lib_log_hook("libbpf.so.1", "libbpf_set_print");
	lib_log_hook("libxdp.so.1", "libxdp_set_print");
}

/* Routes EAL, libbpf and libxdp messages to `fd` (dup'ed; -1: nowhere) and,
 * with `tee`, to stderr as well. May be called before or after EAL init, and
 * again to move the log (the next result directory). */
int detpath_dpdk_route_library_logs(int fd, int tee)
{
	if (!lib_log) {
		cookie_io_functions_t io = { .read = NULL, .write = lib_log_write, .seek = NULL, .close = NULL };
		lib_log = fopencookie(NULL, "w", io);
		if (!lib_log)
			return -errno;
		setvbuf(lib_log, NULL, _IOLBF, 0);
	}
	fflush(lib_log);
	int nfd = fd >= 0 ? dup(fd) : -1;
	if (fd >= 0 && nfd < 0)
		return -errno;
	if (lib_log_fd >= 0)
		close(lib_log_fd);
	lib_log_fd = nfd;
	lib_log_tee = tee;
	lib_log_hook_all();
	return 0;
}

int detpath_dpdk_eal_init(int argc, char **argv)
{
	int r = rte_eal_init(argc, argv);
	int e = rte_errno;
	/* The PMDs (and the libraries they link) are loaded now: hook them. */
	lib_log_hook_all();
	return r < 0 ? -e : r;
}

int detpath_dpdk_errno(void)
{
	return rte_errno;
}

const char *detpath_dpdk_strerror(int e)
{
	return rte_strerror(e < 0 ? -e : e);
}

int detpath_dpdk_dev_probe(const char *devargs)
{
	return rte_dev_probe(devargs);
}

int detpath_dpdk_hotplug_remove(const char *bus, const char *name)
{
	return rte_eal_hotplug_remove(bus, name);
}

int detpath_dpdk_port_by_name(const char *name, uint16_t *port)
{
	return rte_eth_dev_get_port_by_name(name, port);
}

uint16_t detpath_dpdk_port_count(void)
{
	return rte_eth_dev_count_avail();
}

/* Driver name (e.g. "net_af_xdp"), the device name, the kernel ifindex the
 * PMD reports (0 for none), the largest RX frame and MTU. */
int detpath_dpdk_port_info(uint16_t port, char *driver, size_t driver_len,
			   char *device, size_t device_len, uint32_t *if_index,
			   uint32_t *max_rx_pktlen, uint16_t *max_mtu,
			   uint16_t *max_rx_desc, uint16_t *max_tx_desc)
{
	struct rte_eth_dev_info info;
	int r = rte_eth_dev_info_get(port, &info);
	if (r != 0)
		return r;
	snprintf(driver, driver_len, "%s", info.driver_name ? info.driver_name : "?");
	snprintf(device, device_len, "%s", info.device ? rte_dev_name(info.device) : "?");
	*if_index = info.if_index;
	*max_rx_pktlen = info.max_rx_pktlen;
	*max_mtu = info.max_mtu;
	*max_rx_desc = info.rx_desc_lim.nb_max;
	*max_tx_desc = info.tx_desc_lim.nb_max;
	return 0;
}

int detpath_dpdk_port_mac(uint16_t port, uint8_t mac[6])
{
	struct rte_ether_addr a;
	int r = rte_eth_macaddr_get(port, &a);
	if (r != 0)
		return r;
	memcpy(mac, a.addr_bytes, 6);
	return 0;
}

int detpath_dpdk_port_mtu(uint16_t port, uint16_t *mtu)
{
	return rte_eth_dev_get_mtu(port, mtu);
}

/* One RX and one TX queue, no offloads (detpath computes checksums itself),
 * no scatter: every received frame is one mbuf segment. */
int detpath_dpdk_port_setup(uint16_t port, struct rte_mempool *pool,
			    uint16_t *nb_rxd, uint16_t *nb_txd)
{
	struct rte_eth_conf conf;
	int r;

	memset(&conf, 0, sizeof(conf));
	r = rte_eth_dev_configure(port, 1, 1, &conf);
	if (r != 0)
		return r;
	r = rte_eth_dev_adjust_nb_rx_tx_desc(port, nb_rxd, nb_txd);
	if (r != 0)
		return r;
	r = rte_eth_rx_queue_setup(port, 0, *nb_rxd, rte_eth_dev_socket_id(port), NULL, pool);
	if (r != 0)
		return r;
	return rte_eth_tx_queue_setup(port, 0, *nb_txd, rte_eth_dev_socket_id(port), NULL);
}

int detpath_dpdk_port_start(uint16_t port)
{
	return rte_eth_dev_start(port);
}

int detpath_dpdk_port_stop(uint16_t port)
{
	return rte_eth_dev_stop(port);
}

int detpath_dpdk_port_close(uint16_t port)
{
	return rte_eth_dev_close(port);
}

int detpath_dpdk_promiscuous_get(uint16_t port)
{
	return rte_eth_promiscuous_get(port);
}

int detpath_dpdk_allmulticast_enable(uint16_t port)
{
	return rte_eth_allmulticast_enable(port);
}

/* 1 up, 0 down, negative on error; speed in Mb/s. */
int detpath_dpdk_link(uint16_t port, uint32_t *speed)
{
	struct rte_eth_link link;
	int r = rte_eth_link_get_nowait(port, &link);
	if (r != 0)
		return r;
	*speed = link.link_speed;
	return link.link_status == RTE_ETH_LINK_UP;
}

/* ipackets, opackets, ibytes, obytes, imissed, ierrors, oerrors, rx_nombuf */
int detpath_dpdk_port_stats(uint16_t port, uint64_t out[8])
{
	struct rte_eth_stats s;
	int r = rte_eth_stats_get(port, &s);
	if (r != 0)
		return r;
	out[0] = s.ipackets;
	out[1] = s.opackets;
	out[2] = s.ibytes;
	out[3] = s.obytes;
	out[4] = s.imissed;
	out[5] = s.ierrors;
	out[6] = s.oerrors;
	out[7] = s.rx_nombuf;
	return 0;
}

/* NULL on failure (see detpath_dpdk_errno). */
struct rte_mempool *detpath_dpdk_pool_create(const char *name, unsigned n,
					     unsigned cache, uint16_t data_room)
{
	return rte_pktmbuf_pool_create(name, n, cache, 0, data_room, rte_socket_id());
}

/* A packet mbuf pool in ONE virtually contiguous chunk (objects may cross
 * page boundaries: RTE_MEMPOOL_F_NO_IOVA_CONTIG). net_af_xdp registers the
 * pool's memory as its UMEM from the first chunk's address for
 * populated_size * object size bytes: a pool split over several chunks (as
 * rte_pktmbuf_pool_create makes with --no-huge) has mbufs outside that UMEM,
 * whose frames the kernel silently refuses to send. Not for DMA devices. */
struct rte_mempool *detpath_dpdk_pool_create_va(const char *name, unsigned n,
						unsigned cache, uint16_t data_room)
{
	struct rte_pktmbuf_pool_private priv;
	struct rte_mempool *mp;
	int r;

	memset(&priv, 0, sizeof(priv));
	priv.mbuf_data_room_size = data_room;
	priv.mbuf_priv_size = 0;
	mp = rte_mempool_create_empty(name, n, sizeof(struct rte_mbuf) + data_room, cache,
				      sizeof(struct rte_pktmbuf_pool_private), rte_socket_id(),
				      RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (mp == NULL)
		return NULL;
	r = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (r != 0)
		goto fail;
	rte_pktmbuf_pool_init(mp, &priv);
	r = rte_mempool_populate_default(mp);
	if (r < 0)
		goto fail;
	if (mp->nb_mem_chunks != 1) {
		r = -EFAULT;
		goto fail;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
fail:
	rte_mempool_free(mp);
	rte_errno = -r;
	return NULL;
}

void detpath_dpdk_pool_free(struct rte_mempool *pool)
{
	rte_mempool_free(pool);
}

unsigned detpath_dpdk_pool_avail(const struct rte_mempool *pool)
{
	return rte_mempool_avail_count(pool);
}

uint16_t detpath_dpdk_rx_burst(uint16_t port, uint16_t queue,
			       struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_rx_burst(port, queue, pkts, n);
}

uint16_t detpath_dpdk_tx_burst(uint16_t port, uint16_t queue,
			       struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_tx_burst(port, queue, pkts, n);
}

/* Allocates n mbufs or none: 0 on success, negative when the pool has fewer. */
int detpath_dpdk_mbuf_alloc_bulk(struct rte_mempool *pool, struct rte_mbuf **m, unsigned n)
{
	return rte_pktmbuf_alloc_bulk(pool, m, n);
}

void detpath_dpdk_mbuf_free(struct rte_mbuf *m)
{
	rte_pktmbuf_free(m);
}

void detpath_dpdk_mbuf_free_bulk(struct rte_mbuf **m, unsigned n)
{
	rte_pktmbuf_free_bulk(m, n);
}

/* The first segment's data and length; *segs the number of segments. */
uint8_t *detpath_dpdk_mbuf_data(struct rte_mbuf *m, uint32_t *len, uint16_t *segs)
{
	*len = m->data_len;
	*segs = m->nb_segs;
	return rte_pktmbuf_mtod(m, uint8_t *);
}

/* Bytes of headroom in front of the data (where XDP metadata lands). */
uint16_t detpath_dpdk_mbuf_headroom(struct rte_mbuf *m)
{
	return rte_pktmbuf_headroom(m);
}

/* Room at the data pointer of a fresh mbuf (data room minus headroom). */
uint16_t detpath_dpdk_mbuf_room(struct rte_mbuf *m)
{
	return rte_pktmbuf_tailroom(m);
}

/* Sets the length of a fresh single-segment mbuf; returns its data pointer
 * or NULL when len does not fit. */
uint8_t *detpath_dpdk_mbuf_set_len(struct rte_mbuf *m, uint16_t len)
{
	if (len > rte_pktmbuf_tailroom(m) + m->data_len)
		return NULL;
	m->data_len = len;
	m->pkt_len = len;
	return rte_pktmbuf_mtod(m, uint8_t *);
}

void detpath_dpdk_log_level(uint32_t level)
{
	rte_log_set_global_level(level);
}

/* The AF_XDP socket fd of queue 0 of a net_af_xdp port named `name`, or a
 * negative value.
 *
 * Why: DPDK 22.11's net_af_xdp never deletes its UMEM on close (its refcount
 * test is off by one: fixed in 23.11 by "fetch_sub"), so the first XSK, which
 * shares the UMEM's fd, stays open and bound to the interface queue for the
 * life of the process: the queue cannot be opened again and the interface's
 * network namespace is never freed. detpath records this fd at setup and
 * closes it after rte_eth_dev_close (checking it is still the same socket).
 * The fd lives in the driver's per-process data, the first member of which
 * is `int rxq_xsk_fds[]`; struct rte_eth_dev's prefix (6 function pointers,
 * data, process_private) is that of 22.11 only, hence the version guard. */
struct rte_eth_dev;
struct rte_eth_dev *rte_eth_dev_allocated(const char *name); /* INTERNAL in 22.11 */

int detpath_dpdk_af_xdp_fd(const char *name)
{
#if RTE_VERSION >= RTE_VERSION_NUM(22, 11, 0, 0) && RTE_VERSION < RTE_VERSION_NUM(23, 0, 0, 0)
	struct eth_dev_prefix {
		void *fns[6];
		void *data;
		int *process_private;
	};
	struct rte_eth_dev *dev = rte_eth_dev_allocated(name);
	if (dev == NULL || ((struct eth_dev_prefix *)dev)->process_private == NULL)
		return -ENODEV;
	return ((struct eth_dev_prefix *)dev)->process_private[0];
#else
	(void)name;
	return -ENOTSUP;
#endif
}

/* The EAL's runtime directory (e.g. /var/run/dpdk/<file-prefix>). */
const char *detpath_dpdk_runtime_dir(void)
{
	return rte_eal_get_runtime_dir();
}
