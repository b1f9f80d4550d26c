/*
 * enet-many: the reference of docs/performance.md § 2 measured on this
 * machine. ENet (Debian's libenet-dev, the C library that the published
 * figure's ENet-CSharp wraps) under bench/many's conditions: one server
 * process pinned to CPU 0, -clients clients shared among -client-processes
 * processes pinned to CPU 1, every client an ENetHost of its own with one
 * peer and its own socket bound to its own loopback address 127.3.x.y (127.2
 * is bench/many's), each keeping -inflight messages of -size bytes in flight
 * to an echo server: every echo is replaced by a new message, a client takes
 * every event that has arrived on its host, sends as many new messages and
 * flushes once. ENet packs a host's queued commands into as few datagrams as
 * fit, both ways. Messages are unreliable (flags 0, as the published run)
 * unless -reliable (ENET_PACKET_FLAG_RELIABLE, channel 0); an unreliable
 * message without an echo for 250 ms is counted lost and replaced.
 *
 * A client process waits on epoll for its hosts' sockets, services a ready
 * host until it has no event left (enet_host_service with timeout 0, then
 * enet_host_check_events), and services every host at least every 50 ms
 * (bench/many's client timers' interval), so that ENet's own timers
 * (retransmission, pings) run. The server runs ENet's usual loop:
 * enet_host_service with a 1 ms timeout, then every queued event.
 *
 * The parent measures: 2 s of warm-up, then -duration seconds. It prints
 * the messages echoed per second (counted by the clients), p50/p99 round
 * trip (1% buckets), the server process's CPU time per message it echoed
 * (clock_getcpuclockid; as bench/many, which divides by the server's
 * count), its share of its core, the clients' CPU share, and
 * the server's datagrams each way with the messages they carried.
 * -server-cgroup DIR moves the server into a cgroup (v1 cpu controller: a
 * cpu.cfs_quota_us of part of cpu.cfs_period_us) so that it, not the
 * clients' core, is the bound; bench/many has the same flag.
 * -clients-both-cpus lets the client processes run on CPU 0 too, and
 * -server-nice N sets the server's nice value: with -20 the clients get
 * what the server leaves of its core, and the other core (bench/many:
 * -client-cpus 0,1 -server-nice -20).
 *
 *	apt-get install libenet-dev
 *	gcc -O2 -Wall -o /tmp/enet-many bench/enetref/enet-many.c -lenet -lm
 *	/tmp/enet-many                 # 1,000 clients × 10 unreliable in flight, 32 B
 *	/tmp/enet-many -reliable       # the same, reliable
 *
 * Loopback only: the server listens on 127.0.0.1, the clients bind
 * 127.3.x.y and send to the server alone. Every loop is bounded in time;
 * every child is killed and reaped before the parent exits.
 */
#define _GNU_SOURCE
#include <enet/enet.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define MAXPROCS 64
#define BUCKETS 2048      /* 1% buckets of the round trip in µs: 1.01^2048 µs is far beyond any run */
#define MAXINFLIGHT 64

/* shared is the memory the parent and its children share (MAP_SHARED). */
struct shared {
	volatile int ready;      /* the server listens */
	volatile int dialed;     /* client processes that have connected all their clients */
	volatile int failed;     /* a child failed */
	volatile int go;         /* clients: start sending */
	volatile int measuring;  /* clients: record round trips */
	volatile int stop;       /* everyone: end */
	volatile uint64_t echoed;                 /* server: messages echoed */
	volatile uint64_t srvIn, srvOut;          /* server: datagrams received and sent */
	volatile uint64_t msgs[MAXPROCS];         /* clients: echoes received, per process */
	volatile uint64_t lost[MAXPROCS];         /* clients: unreliable messages given up */
	volatile uint64_t hist[MAXPROCS][BUCKETS];
};

struct opts {
	int clients, inflight, size, procs, reliable;
	double duration, warmup;
	uint16_t port;
	const char *cgroup; /* a cgroup directory the server is moved into, or NULL */
	int bothCPUs;       /* the clients may run on CPU 0 too (what the server leaves of it) */
	int nice;           /* the server's nice value */
};

static struct shared *sh;

static uint64_t nowNS(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pin(int cpu, int alsoCPU0) {
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (alsoCPU0)
		CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		perror("sched_setaffinity");
}

static void raiseNoFile(void) {
	struct rlimit l;
	if (getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur < l.rlim_max) {
		l.rlim_cur = l.rlim_max;
		setrlimit(RLIMIT_NOFILE, &l);
	}
}

static uint32_t loopback(int a, int b, int c, int d) {
	return htonl((uint32_t)a << 24 | (uint32_t)b << 16 | (uint32_t)c << 8 | (uint32_t)d);
}

/* server echoes every message on the flags it came with, until stop. */
static int server(const struct opts *o) {
	pin(0, 0);
	if (o->nice != 0 && setpriority(PRIO_PROCESS, 0, o->nice) != 0)
		perror("setpriority");
	if (enet_initialize() != 0)
		return 1;
	ENetAddress addr = {.host = loopback(127, 0, 0, 1), .port = o->port};
	size_t peers = (size_t)o->clients + 16;
	if (peers > ENET_PROTOCOL_MAXIMUM_PEER_ID)
		peers = ENET_PROTOCOL_MAXIMUM_PEER_ID;
	ENetHost *h = enet_host_create(&addr, peers, 1, 0, 0);
	if (h == NULL) {
		fprintf(stderr, "enet-many: server: cannot listen on 127.0.0.1:%u\n", o->port);
		return 1;
	}
	sh->ready = 1;
	ENetEvent ev;
	uint64_t echoed = 0;
	while (!sh->stop) {
		int r = enet_host_service(h, &ev, 1);
		while (r > 0) {
			if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
				ENetPacket *p = ev.packet;
				enet_uint32 flags = p->flags & ENET_PACKET_FLAG_RELIABLE;
				ENetPacket *echo = enet_packet_create(p->data, p->dataLength, flags);
				if (echo != NULL && enet_peer_send(ev.peer, ev.channelID, echo) == 0)
					echoed++;
				enet_packet_destroy(p);
			}
			r = enet_host_check_events(h, &ev);
		}
		sh->echoed = echoed;
		sh->srvIn = h->totalReceivedPackets;
		sh->srvOut = h->totalSentPackets;
	}
	enet_host_destroy(h);
	enet_deinitialize();
	return 0;
}

/* slot is one message in flight: when it was sent and its generation. */
struct slot {
	uint64_t sent;
	uint32_t gen;
};

/* cli is one client: its host, its peer and its messages in flight. */
struct cli {
	ENetHost *h;
	ENetPeer *peer;
	int connected;
	struct slot slots[MAXINFLIGHT];
};

/* sendSlot sends a new message in slot i of c: its send time, slot and generation. */
static void sendSlot(const struct opts *o, struct cli *c, int i, uint64_t now, unsigned char *buf) {
	c->slots[i].sent = now;
	c->slots[i].gen++;
	memset(buf, 0, (size_t)o->size);
	memcpy(buf, &now, 8);
	uint32_t s = (uint32_t)i, g = c->slots[i].gen;
	memcpy(buf + 8, &s, 4);
	memcpy(buf + 12, &g, 4);
	ENetPacket *p = enet_packet_create(buf, (size_t)o->size, o->reliable ? ENET_PACKET_FLAG_RELIABLE : 0);
	if (p != NULL && enet_peer_send(c->peer, 0, p) != 0)
		enet_packet_destroy(p);
}

static int bucket(uint64_t us) {
	if (us < 1)
		us = 1;
	int b = (int)(log((double)us) / log(1.01));
	return b >= BUCKETS ? BUCKETS - 1 : b;
}

/* drain handles every event of c's host: each echo replaces its message. */
static void drain(const struct opts *o, int proc, struct cli *c, unsigned char *buf, uint64_t *count) {
	ENetEvent ev;
	int r = enet_host_service(c->h, &ev, 0);
	while (r > 0) {
		if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
			ENetPacket *p = ev.packet;
			if (p->dataLength >= 16) {
				uint64_t sent;
				uint32_t s, g;
				memcpy(&sent, p->data, 8);
				memcpy(&s, p->data + 8, 4);
				memcpy(&g, p->data + 12, 4);
				if (s < (uint32_t)o->inflight && c->slots[s].gen == g) {
					uint64_t now = nowNS();
					(*count)++;
					if (sh->measuring)
						sh->hist[proc][bucket((now - sent) / 1000)]++;
					sendSlot(o, c, (int)s, now, buf);
				}
			}
			enet_packet_destroy(p);
		} else if (ev.type == ENET_EVENT_TYPE_CONNECT) {
			c->connected = 1;
		} else if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
			c->connected = 0;
		}
		r = enet_host_check_events(c->h, &ev);
	}
	enet_host_flush(c->h);
}

/* clientProc runs clients first .. first+n-1 until stop. */
static int clientProc(const struct opts *o, int proc, int first, int n) {
	pin(1, o->bothCPUs);
	raiseNoFile();
	if (enet_initialize() != 0)
		return 1;
	struct cli *cs = calloc((size_t)n, sizeof *cs);
	unsigned char *buf = calloc(1, (size_t)o->size + 16);
	int ep = epoll_create1(0);
	if (cs == NULL || buf == NULL || ep < 0)
		return 1;
	ENetAddress srv = {.host = loopback(127, 0, 0, 1), .port = o->port};
	for (int k = 0; k < n; k++) {
		int i = first + k;
		ENetAddress a = {.host = loopback(127, 3, i / 250, i % 250 + 1), .port = 0};
		cs[k].h = enet_host_create(&a, 1, 1, 0, 0);
		if (cs[k].h == NULL) {
			fprintf(stderr, "enet-many: client %d: cannot bind 127.3.%d.%d\n", i, i / 250, i % 250 + 1);
			return 1;
		}
		cs[k].peer = enet_host_connect(cs[k].h, &srv, 1, 0);
		struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)k};
		if (cs[k].peer == NULL || epoll_ctl(ep, EPOLL_CTL_ADD, cs[k].h->socket, &e) != 0)
			return 1;
	}
	uint64_t count = 0, lost = 0;
	uint64_t deadline = nowNS() + 60ull * 1000000000ull;
	for (int left = n; left > 0;) {
		if (nowNS() > deadline || sh->stop) {
			fprintf(stderr, "enet-many: %d clients of process %d did not connect in 60 s\n", left, proc);
			return 1;
		}
		left = 0;
		for (int k = 0; k < n; k++) {
			if (!cs[k].connected)
				drain(o, proc, &cs[k], buf, &count);
			left += !cs[k].connected;
		}
		usleep(1000);
	}
	__sync_fetch_and_add(&sh->dialed, 1);
	while (!sh->go && !sh->stop)
		usleep(1000);
	uint64_t now = nowNS();
	for (int k = 0; k < n; k++) {
		for (int i = 0; i < o->inflight; i++)
			sendSlot(o, &cs[k], i, now, buf);
		enet_host_flush(cs[k].h);
	}
	struct epoll_event evs[256];
	uint64_t lastAll = nowNS();
	const uint64_t every = 50ull * 1000000, lossAfter = 250ull * 1000000;
	while (!sh->stop) {
		int m = epoll_wait(ep, evs, 256, 10);
		for (int j = 0; j < m; j++)
			drain(o, proc, &cs[evs[j].data.u32], buf, &count);
		now = nowNS();
		if (now - lastAll >= every) {
			lastAll = now;
			for (int k = 0; k < n; k++) {
				if (!o->reliable)
					for (int i = 0; i < o->inflight; i++)
						if (now - cs[k].slots[i].sent > lossAfter) {
							lost++;
							sendSlot(o, &cs[k], i, now, buf);
						}
				drain(o, proc, &cs[k], buf, &count);
			}
		}
		sh->msgs[proc] = count;
		sh->lost[proc] = lost;
	}
	for (int k = 0; k < n; k++)
		enet_host_destroy(cs[k].h);
	enet_deinitialize();
	return 0;
}

/* cpuNS is a process's CPU time so far (user + system), in ns. */
static uint64_t cpuNS(pid_t pid) {
	clockid_t id;
	struct timespec ts;
	if (clock_getcpuclockid(pid, &id) != 0 || clock_gettime(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t sumMsgs(int procs) {
	uint64_t s = 0;
	for (int p = 0; p < procs; p++)
		s += sh->msgs[p];
	return s;
}

/* percentile is the round trip (ms) below which q of the recorded ones fall. */
static double percentile(int procs, double q) {
	uint64_t total = 0;
	static uint64_t all[BUCKETS];
	for (int b = 0; b < BUCKETS; b++) {
		all[b] = 0;
		for (int p = 0; p < procs; p++)
			all[b] += sh->hist[p][b];
		total += all[b];
	}
	uint64_t want = (uint64_t)(q * (double)total), seen = 0;
	for (int b = 0; b < BUCKETS; b++) {
		seen += all[b];
		if (seen > want)
			return pow(1.01, b + 1) / 1000.0;
	}
	return 0;
}

static pid_t pids[MAXPROCS + 1];
static int npids;

static void killAll(void) {
	sh->stop = 1;
	usleep(200000);
	for (int i = 0; i < npids; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < npids; i++)
		waitpid(pids[i], NULL, 0);
	npids = 0;
}

/* spawn forks a child that runs server (srv set) or the client process
 * proc; the child dies with the parent. */
static pid_t spawn(int (*srv)(const struct opts *), const struct opts *o, int proc, int first, int n) {
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int rc = srv != NULL ? srv(o) : clientProc(o, proc, first, n);
		if (rc != 0)
			sh->failed = 1;
		_exit(rc);
	}
	if (pid > 0)
		pids[npids++] = pid;
	return pid;
}

/* waitFor waits until cond() holds, a child failed, or secs pass. */
static int waitFor(int (*cond)(const struct opts *), const struct opts *o, double secs) {
	uint64_t end = nowNS() + (uint64_t)(secs * 1e9);
	while (!cond(o)) {
		if (sh->failed || nowNS() > end)
			return -1;
		usleep(1000);
	}
	return 0;
}

static int isReady(const struct opts *o) { (void)o; return sh->ready; }
static int allDialed(const struct opts *o) { return sh->dialed == o->procs; }

/* freePort picks a UDP port on 127.0.0.1 that is free now. */
static uint16_t freePort(void) {
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = loopback(127, 0, 0, 1)};
	socklen_t l = sizeof a;
	uint16_t port = 0;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &l) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* joinCgroup moves process pid into the cgroup directory dir (a server
 * held to part of its core by the cgroup's CPU quota). */
static int joinCgroup(const char *dir, pid_t pid) {
	char path[4096];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	int bad = fprintf(f, "%d\n", (int)pid) < 0;
	return (fclose(f) != 0 || bad) ? -1 : 0;
}

static int usage(void) {
	fprintf(stderr, "usage: enet-many [-clients N] [-inflight N] [-size B] [-client-processes N] [-reliable] [-duration S] [-warmup S] [-server-cgroup DIR] [-clients-both-cpus] [-server-nice N]\n");
	return 2;
}

static int parse(int argc, char **argv, struct opts *o) {
	*o = (struct opts){.clients = 1000, .inflight = 10, .size = 32, .procs = 4, .duration = 5, .warmup = 2};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] == '-' && a[1] == '-')
			a++;
		if (strcmp(a, "-reliable") == 0) {
			o->reliable = 1;
			continue;
		}
		if (strcmp(a, "-clients-both-cpus") == 0) {
			o->bothCPUs = 1;
			continue;
		}
		if (i + 1 >= argc)
			return -1;
		const char *v = argv[++i];
		if (strcmp(a, "-clients") == 0)
			o->clients = atoi(v);
		else if (strcmp(a, "-inflight") == 0)
			o->inflight = atoi(v);
		else if (strcmp(a, "-size") == 0)
			o->size = atoi(v);
		else if (strcmp(a, "-client-processes") == 0)
			o->procs = atoi(v);
		else if (strcmp(a, "-duration") == 0)
			o->duration = atof(v);
		else if (strcmp(a, "-warmup") == 0)
			o->warmup = atof(v);
		else if (strcmp(a, "-server-cgroup") == 0)
			o->cgroup = v;
		else if (strcmp(a, "-server-nice") == 0)
			o->nice = atoi(v);
		else
			return -1;
	}
	if (o->clients < 1 || o->clients > 62500 || o->inflight < 1 || o->inflight > MAXINFLIGHT || o->size < 16 ||
	    o->size > 1000 || o->procs < 1 || o->procs > MAXPROCS || o->procs > o->clients || o->duration <= 0 ||
	    o->duration > 600 || o->warmup < 0 || o->warmup > 600)
		return -1;
	return 0;
}

/* coreBusy reads CPU cpu's busy and total jiffies from /proc/stat. */
static void coreBusy(int cpu, uint64_t *busy, uint64_t *total) {
	FILE *f = fopen("/proc/stat", "r");
	char line[512], want[16];
	snprintf(want, sizeof want, "cpu%d ", cpu);
	*busy = *total = 0;
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, want, strlen(want)) != 0)
			continue;
		unsigned long long v[10] = {0};
		sscanf(line + strlen(want), "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
		       &v[5], &v[6], &v[7], &v[8], &v[9]);
		for (int i = 0; i < 8; i++)
			*total += v[i];
		*busy = *total - v[3] - v[4];
	}
	if (f != NULL)
		fclose(f);
}

int main(int argc, char **argv) {
	struct opts o;
	if (parse(argc, argv, &o) != 0)
		return usage();
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	memset((void *)sh, 0, sizeof *sh);
	o.port = freePort();
	if (o.port == 0)
		return 1;
	pid_t srvPid = spawn(server, &o, 0, 0, 0);
	if (srvPid < 0 || waitFor(isReady, &o, 10) != 0) {
		fprintf(stderr, "enet-many: the server did not start\n");
		killAll();
		return 1;
	}
	if (o.cgroup != NULL && joinCgroup(o.cgroup, srvPid) != 0) {
		fprintf(stderr, "enet-many: cannot move the server into %s/cgroup.procs: %s\n", o.cgroup, strerror(errno));
		killAll();
		return 1;
	}
	uint64_t t0 = nowNS();
	for (int p = 0; p < o.procs; p++) {
		int first = o.clients * p / o.procs, last = o.clients * (p + 1) / o.procs;
		if (spawn(NULL, &o, p, first, last - first) < 0) {
			killAll();
			return 1;
		}
	}
	if (waitFor(allDialed, &o, 90) != 0) {
		fprintf(stderr, "enet-many: the clients did not connect\n");
		killAll();
		return 1;
	}
	double dial = (double)(nowNS() - t0) / 1e9;
	sh->go = 1;
	usleep((useconds_t)(o.warmup * 1e6));
	uint64_t c0 = cpuNS(srvPid), m0 = sumMsgs(o.procs), e0 = sh->echoed, in0 = sh->srvIn, out0 = sh->srvOut;
	uint64_t cc0 = 0, b0, tot0, b1, tot1;
	for (int i = 1; i < npids; i++)
		cc0 += cpuNS(pids[i]);
	coreBusy(1, &b0, &tot0);
	uint64_t w0 = nowNS();
	sh->measuring = 1;
	usleep((useconds_t)(o.duration * 1e6));
	sh->measuring = 0;
	uint64_t w1 = nowNS();
	uint64_t c1 = cpuNS(srvPid), m1 = sumMsgs(o.procs), e1 = sh->echoed, in1 = sh->srvIn, out1 = sh->srvOut;
	uint64_t cc1 = 0, lost = 0;
	for (int i = 1; i < npids; i++)
		cc1 += cpuNS(pids[i]);
	coreBusy(1, &b1, &tot1);
	for (int p = 0; p < o.procs; p++)
		lost += sh->lost[p];
	int failed = sh->failed;
	killAll();
	if (failed) {
		fprintf(stderr, "enet-many: a process failed\n");
		return 1;
	}
	double secs = (double)(w1 - w0) / 1e9;
	uint64_t msgs = m1 - m0, echoed = e1 - e0, din = in1 - in0, dout = out1 - out0;
	printf("enet-many: ENet %u.%u.%u, %d clients × %d %s in flight, %d B, %d client processes (dialed in %.2f s)\n",
	       ENET_VERSION_MAJOR, ENET_VERSION_MINOR, ENET_VERSION_PATCH, o.clients, o.inflight,
	       o.reliable ? "reliable" : "unreliable", o.size, o.procs, dial);
	/* Per message echoed by the server, as bench/many divides; per echo
	 * the clients received besides (less when unreliable ones are lost). */
	printf("msgs/s %.0f  p50 %.1f ms  p99 %.1f ms  server CPU per message %.0f ns (per echo received %.0f ns)  server core busy %.0f%%  clients' CPU %.0f%%  CPU 1 busy %.0f%%\n",
	       (double)msgs / secs, percentile(o.procs, 0.50), percentile(o.procs, 0.99),
	       echoed ? (double)(c1 - c0) / (double)echoed : 0, msgs ? (double)(c1 - c0) / (double)msgs : 0,
	       100 * (double)(c1 - c0) / 1e9 / secs,
	       100 * (double)(cc1 - cc0) / 1e9 / secs, tot1 > tot0 ? 100.0 * (double)(b1 - b0) / (double)(tot1 - tot0) : 0);
	printf("server: %.0f datagrams/s in, %.0f out; %.1f messages per datagram in, %.1f out; lost (unreliable, replaced) %llu\n",
	       (double)din / secs, (double)dout / secs, din ? (double)echoed / (double)din : 0,
	       dout ? (double)echoed / (double)dout : 0, (unsigned long long)lost);
	return 0;
}
