// Fast DDS 2.9 against itself for `detpath pubsub bench`'s reference rows
// (crates/pubsub-bench/src/fastdds.rs builds and runs it): the same
// workloads as detpath's rows, over Fast DDS's own UDPv4 transport only
// (no shared memory, no data sharing), discovery by unicast to --peer.
//
//   ping: 32 B KeyedSeq at --rate Hz on one topic, reliable KEEP_LAST 1;
//         the pong's echo on a second topic; each round's send and receive
//         time kept in memory and printed when the run ends, one JSON line
//         per answered ping: {"ev":"rtt","seq":S,"sent_ns":A,"recv_ns":B}.
//   pong: echoes every ping it takes; exits after --idle s without one.
//   pub:  writes as fast as a reliable KEEP_ALL writer (depth --depth)
//         takes samples, for --duration s after it matched.
//   sub:  counts samples (and gaps in seq: lost), one JSON line a second
//         {"ev":"second",...}; exits after --idle s without one.
// Every role ends with {"ev":"done",...}; {"ev":"unmatched"} and exit 3
// when discovery did not complete within --match-timeout s.

#include "KeyedSeqPubSubTypes.h"

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace eprosima::fastdds::dds;
using Clock = std::chrono::steady_clock;

namespace {

// The reliable writers' heartbeat period, ns (--heartbeat-us).
uint32_t o_heartbeat_ns = 5000000;

const char* PING_TOPIC = "DetpathBenchPing";
const char* PONG_TOPIC = "DetpathBenchPong";
const char* DATA_TOPIC = "DetpathBenchData";

struct Options
{
    std::string role;
    int domain = 0;
    size_t size = 32;           // KeyedSeq's 12 bytes + baggage
    double rate = 1000;         // ping: pings per second
    double duration = 5;        // ping, pub: seconds of traffic after the match
    double idle = 2;            // pong, sub: seconds without a sample before exiting (once one came)
    double limit = 60;          // pong, sub: seconds before exiting in any case
    double match_timeout = 20;  // every role: seconds to discover the peer
    int depth = 1000;           // pub, sub: KEEP_ALL resource limit
    std::string addr;           // this side's interface address
    std::string peer;           // the other side's address (unicast discovery)
};

[[noreturn]] void usage()
{
    std::fprintf(stderr,
            "usage: detpath-fastdds-perf ping|pong|pub|sub --addr IP --peer IP [--domain D] [--size S]\n"
            "       [--rate HZ] [--duration S] [--idle S] [--limit S] [--match-timeout S] [--depth N]\n       [--heartbeat-us US]\n");
    std::exit(2);
}

Options parse(
        int argc,
        char** argv)
{
    Options o;
    if (argc < 2)
    {
        usage();
    }
    o.role = argv[1];
    if (o.role != "ping" && o.role != "pong" && o.role != "pub" && o.role != "sub")
    {
        usage();
    }
    try
    {
        for (int i = 2; i < argc; ++i)
        {
            std::string k = argv[i];
            if (i + 1 >= argc)
            {
                usage();
            }
            std::string v = argv[++i];
            if (k == "--domain") o.domain = std::stoi(v);
            else if (k == "--size") o.size = std::stoul(v);
            else if (k == "--rate") o.rate = std::stod(v);
            else if (k == "--duration") o.duration = std::stod(v);
            else if (k == "--idle") o.idle = std::stod(v);
            else if (k == "--limit") o.limit = std::stod(v);
            else if (k == "--match-timeout") o.match_timeout = std::stod(v);
            else if (k == "--depth") o.depth = std::stoi(v);
            else if (k == "--heartbeat-us") o_heartbeat_ns = static_cast<uint32_t>(std::stoul(v) * 1000);
            else if (k == "--addr") o.addr = v;
            else if (k == "--peer") o.peer = v;
            else usage();
        }
    }
    catch (const std::exception&)
    {
        usage();
    }
    if (o.size < 12 || o.rate <= 0 || o.depth < 1 || o.addr.empty() || o.peer.empty())
    {
        usage();
    }
    return o;
}

int64_t now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

double seconds_since(
        int64_t t0)
{
    return (now_ns() - t0) / 1e9;
}

// UDPv4 on this side's interface only, the peer's well-known ports as
// initial peers (port 0: Fast DDS tries its first participant indices).
DomainParticipant* participant(
        const Options& o)
{
    DomainParticipantQos q;
    q.name("detpath-bench-fastdds-" + o.role);
    q.transport().use_builtin_transports = false;
    auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.push_back(o.addr);
    q.transport().user_transports.push_back(udp);
    eprosima::fastrtps::rtps::Locator_t peer;
    eprosima::fastrtps::rtps::IPLocator::setIPv4(peer, o.peer);
    q.wire_protocol().builtin.initialPeersList.push_back(peer);
    return DomainParticipantFactory::get_instance()->create_participant(o.domain, q);
}

// Reliable, volatile; KEEP_LAST 1 (ping and pong, as ddsperf's and
// detpath's latency topics) or KEEP_ALL up to `depth` samples (data).
template<class Q>
void qos(
        Q& q,
        bool keep_all,
        int depth)
{
    q.reliability().kind = RELIABLE_RELIABILITY_QOS;
    q.durability().kind = VOLATILE_DURABILITY_QOS;
    q.history().kind = keep_all ? KEEP_ALL_HISTORY_QOS : KEEP_LAST_HISTORY_QOS;
    q.history().depth = keep_all ? depth : 1;
    if (keep_all)
    {
        q.resource_limits().max_samples = depth;
        q.resource_limits().max_instances = 1;
        q.resource_limits().max_samples_per_instance = depth;
    }
    q.data_sharing().off();
}

struct Node
{
    DomainParticipant* dp = nullptr;
    Publisher* pub = nullptr;
    Subscriber* sub = nullptr;
    // Before the participant exists: discovery runs from here.
    int64_t created_ns = now_ns();

    explicit Node(
            const Options& o)
    {
        dp = participant(o);
        if (dp == nullptr)
        {
            std::fprintf(stderr, "detpath-fastdds-perf: create_participant failed\n");
            std::exit(2);
        }
        TypeSupport type(new KeyedSeqPubSubType());
        type.register_type(dp);
        pub = dp->create_publisher(PUBLISHER_QOS_DEFAULT);
        sub = dp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    }

    ~Node()
    {
        dp->delete_contained_entities();
        DomainParticipantFactory::get_instance()->delete_participant(dp);
    }

    Topic* topic(
            const char* name)
    {
        return dp->create_topic(name, "KeyedSeq", TOPIC_QOS_DEFAULT);
    }

    DataWriter* writer(
            const char* name,
            bool keep_all,
            int depth)
    {
        DataWriterQos q = pub->get_default_datawriter_qos();
        qos(q, keep_all, depth);
        q.publish_mode().kind = SYNCHRONOUS_PUBLISH_MODE;
        // Fast DDS's default heartbeat period (3 s) leaves a full KEEP_ALL
        // history blocked for seconds; its own throughput test asks for
        // heartbeats every few ms, as CycloneDDS and detpath send them.
        q.reliable_writer_qos().times.heartbeatPeriod = eprosima::fastrtps::Duration_t(0, o_heartbeat_ns);
        DataWriter* w = pub->create_datawriter(topic(name), q);
        if (w == nullptr)
        {
            std::fprintf(stderr, "detpath-fastdds-perf: create_datawriter %s failed\n", name);
            std::exit(2);
        }
        return w;
    }

    DataReader* reader(
            const char* name,
            bool keep_all,
            int depth,
            DataReaderListener* l)
    {
        DataReaderQos q = sub->get_default_datareader_qos();
        qos(q, keep_all, depth);
        DataReader* r = sub->create_datareader(topic(name), q, l, StatusMask::data_available());
        if (r == nullptr)
        {
            std::fprintf(stderr, "detpath-fastdds-perf: create_datareader %s failed\n", name);
            std::exit(2);
        }
        return r;
    }
};

// Waits until the writer (when given) and the reader (when given) each
// matched the other side; false after the timeout.
bool matched(
        DataWriter* w,
        DataReader* r,
        double timeout)
{
    int64_t t0 = now_ns();
    while (seconds_since(t0) < timeout)
    {
        PublicationMatchedStatus ws;
        SubscriptionMatchedStatus rs;
        bool ok = true;
        if (w != nullptr)
        {
            w->get_publication_matched_status(ws);
            ok = ok && ws.current_count > 0;
        }
        if (r != nullptr)
        {
            r->get_subscription_matched_status(rs);
            ok = ok && rs.current_count > 0;
        }
        if (ok)
        {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::printf("{\"ev\":\"unmatched\"}\n");
    std::fflush(stdout);
    return false;
}

KeyedSeq sample(
        const Options& o)
{
    KeyedSeq s;
    s.keyval(0);
    s.baggage().assign(o.size - 12, 0xee);
    return s;
}

// What a listener saw: samples taken, the time of the last, and (pong) the
// replies it wrote or (ping) the rounds it completed.
struct Taken
{
    std::atomic<uint64_t> count{0};
    std::atomic<int64_t> last_ns{0};
};

// Pong: each ping taken is written back on the pong topic, from Fast DDS's
// receive thread (the listener), as soon as it is in.
struct Echo : DataReaderListener
{
    DataWriter* out = nullptr;
    Taken taken;

    void on_data_available(
            DataReader* r) override
    {
        KeyedSeq s;
        SampleInfo info;
        while (r->take_next_sample(&s, &info) == ReturnCode_t::RETCODE_OK)
        {
            if (info.valid_data)
            {
                out->write(&s);
                taken.count.fetch_add(1, std::memory_order_relaxed);
                taken.last_ns.store(now_ns(), std::memory_order_relaxed);
            }
        }
    }
};

// Ping: each pong's seq and arrival time, kept for the end of the run.
struct Rounds : DataReaderListener
{
    std::mutex m;
    std::vector<std::pair<uint32_t, int64_t>> in;

    void on_data_available(
            DataReader* r) override
    {
        KeyedSeq s;
        SampleInfo info;
        while (r->take_next_sample(&s, &info) == ReturnCode_t::RETCODE_OK)
        {
            int64_t t = now_ns();
            if (info.valid_data)
            {
                std::lock_guard<std::mutex> g(m);
                in.emplace_back(s.seq(), t);
            }
        }
    }
};

// Sub: samples counted, and seq gaps (samples the writer sent that never came).
struct Count : DataReaderListener
{
    Taken taken;
    std::atomic<uint64_t> lost{0};
    uint32_t next = 0;

    void on_data_available(
            DataReader* r) override
    {
        KeyedSeq s;
        SampleInfo info;
        while (r->take_next_sample(&s, &info) == ReturnCode_t::RETCODE_OK)
        {
            if (!info.valid_data)
            {
                continue;
            }
            if (next != 0 && s.seq() > next)
            {
                lost.fetch_add(s.seq() - next, std::memory_order_relaxed);
            }
            next = s.seq() + 1;
            taken.count.fetch_add(1, std::memory_order_relaxed);
        }
        taken.last_ns.store(now_ns(), std::memory_order_relaxed);
    }
};

// Until `idle` s passed without a sample (once one came) or `limit` s in all.
void until_idle(
        const Options& o,
        const Taken& t,
        int64_t t0,
        const std::function<void(double)>& each_second)
{
    int64_t next = t0 + 1000000000;
    while (seconds_since(t0) < o.limit)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (now_ns() >= next)
        {
            each_second((next - t0) / 1e9);
            next += 1000000000;
        }
        int64_t last = t.last_ns.load(std::memory_order_relaxed);
        if (last != 0 && (now_ns() - last) / 1e9 > o.idle)
        {
            return;
        }
    }
}

int ping(
        const Options& o)
{
    Node n(o);
    Rounds rounds;
    DataWriter* w = n.writer(PING_TOPIC, false, 1);
    DataReader* r = n.reader(PONG_TOPIC, false, 1, &rounds);
    int64_t t0 = now_ns();
    if (!matched(w, r, o.match_timeout))
    {
        return 3;
    }
    double discovery_ms = (now_ns() - n.created_ns) / 1e6;
    size_t max = static_cast<size_t>(o.rate * o.duration) + 1;
    std::vector<int64_t> sent(max + 1, 0);
    rounds.in.reserve(max);
    KeyedSeq s = sample(o);
    int64_t start = now_ns();
    auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / o.rate));
    auto due = Clock::now();
    uint32_t seq = 0;
    while (seq < max && seconds_since(start) < o.duration)
    {
        std::this_thread::sleep_until(due);
        due += period;
        s.seq(++seq);
        sent[seq] = now_ns();
        w->write(&s);
    }
    // The last pongs' time to come back.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::vector<std::pair<uint32_t, int64_t>> in;
    {
        std::lock_guard<std::mutex> g(rounds.m);
        in = rounds.in;
    }
    size_t answered = 0;
    for (const auto& [q, t] : in)
    {
        if (q >= 1 && q <= seq)
        {
            std::printf("{\"ev\":\"rtt\",\"seq\":%u,\"sent_ns\":%lld,\"recv_ns\":%lld}\n", q, static_cast<long long>(sent[q] - t0),
                    static_cast<long long>(t - t0));
            ++answered;
        }
    }
    std::printf("{\"ev\":\"done\",\"sent\":%u,\"received\":%zu,\"discovery_ms\":%.3f}\n", seq, answered, discovery_ms);
    std::fflush(stdout);
    return 0;
}

int pong(
        const Options& o)
{
    Node n(o);
    Echo echo;
    echo.out = n.writer(PONG_TOPIC, false, 1);
    DataReader* r = n.reader(PING_TOPIC, false, 1, &echo);
    int64_t t0 = now_ns();
    if (!matched(echo.out, r, o.match_timeout))
    {
        return 3;
    }
    until_idle(o, echo.taken, t0, [](double) {});
    std::printf("{\"ev\":\"done\",\"echoed\":%llu}\n", static_cast<unsigned long long>(echo.taken.count.load()));
    std::fflush(stdout);
    return 0;
}

int pub(
        const Options& o)
{
    Node n(o);
    DataWriter* w = n.writer(DATA_TOPIC, true, o.depth);
    if (!matched(w, nullptr, o.match_timeout))
    {
        return 3;
    }
    KeyedSeq s = sample(o);
    uint64_t written = 0, blocked = 0;
    int64_t start = now_ns();
    uint32_t seq = 0;
    while (seconds_since(start) < o.duration)
    {
        s.seq(seq + 1);
        // A full KEEP_ALL history blocks the write until the reader
        // acknowledges (max_blocking_time, then false): that is the flow control.
        if (w->write(&s))
        {
            ++seq;
            ++written;
        }
        else
        {
            ++blocked;
        }
    }
    w->wait_for_acknowledgments(eprosima::fastrtps::Duration_t(5, 0));
    std::printf("{\"ev\":\"done\",\"written\":%llu,\"blocked\":%llu}\n", static_cast<unsigned long long>(written),
            static_cast<unsigned long long>(blocked));
    std::fflush(stdout);
    return 0;
}

int sub(
        const Options& o)
{
    Node n(o);
    Count count;
    DataReader* r = n.reader(DATA_TOPIC, true, o.depth, &count);
    int64_t t0 = now_ns();
    if (!matched(nullptr, r, o.match_timeout))
    {
        return 3;
    }
    uint64_t before = 0;
    until_idle(o, count.taken, t0, [&](double t) {
        uint64_t total = count.taken.count.load(std::memory_order_relaxed);
        std::printf("{\"ev\":\"second\",\"t\":%.3f,\"samples\":%llu,\"total\":%llu,\"lost\":%llu}\n", t,
                static_cast<unsigned long long>(total - before), static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(count.lost.load()));
        std::fflush(stdout);
        before = total;
    });
    std::printf("{\"ev\":\"done\",\"received\":%llu,\"lost\":%llu}\n", static_cast<unsigned long long>(count.taken.count.load()),
            static_cast<unsigned long long>(count.lost.load()));
    std::fflush(stdout);
    return 0;
}

} // namespace

int main(
        int argc,
        char** argv)
{
    Options o = parse(argc, argv);
    if (o.role == "ping") return ping(o);
    if (o.role == "pong") return pong(o);
    if (o.role == "pub") return pub(o);
    return sub(o);
}
