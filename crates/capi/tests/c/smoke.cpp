// C++ smoke test: the header compiles as C++ (-Wall -Wextra -pedantic
// -Werror) and links; one endpoint sends a datagram to itself.
#include <detpath.h>

#include <cstdio>
#include <cstring>
#include <string>

static int fail(const std::string &what)
{
	std::fprintf(stderr, "FAIL: %s (last error: %s)\n", what.c_str(), detpath_last_error());
	return 1;
}

int main()
{
	if (detpath_open("bogus://x") != nullptr)
		return fail("a bad spec opened");
	if (std::string(detpath_last_error()).find("unknown datapath") == std::string::npos)
		return fail("no message for a bad spec");

	detpath_endpoint *ep = detpath_open("udp://127.0.0.1:0");
	if (ep == nullptr)
		return fail("open");
	detpath_addr self{};
	if (detpath_local_addr(ep, &self) != 0)
		return fail("local address");
	const std::string hello = "hello from C++";
	if (detpath_send_to(ep, hello.data(), hello.size(), self.ip, self.port) != 0)
		return fail("send");
	char buf[64] = {};
	detpath_rx_meta meta{};
	long n = detpath_recv(ep, buf, sizeof buf, 1000000, &meta);
	if (n != static_cast<long>(hello.size()) || std::string(buf, static_cast<size_t>(n)) != hello)
		return fail("receive");
	struct detpath_counters c{};
	if (detpath_counters(ep, &c) != 0 || c.rx_packets != 1 || c.tx_packets != 1)
		return fail("counters");
	std::printf("ok: C++ %s, %s, v%s\n", detpath_capabilities(ep), meta.peer.ip, detpath_version());
	detpath_close(ep);
	return 0;
}
