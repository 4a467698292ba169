import { execFile, execFileSync, spawnSync } from "node:child_process";

/**
 * A network namespace of its own for one service process, joined to the root namespace by a veth
 * pair with private addresses (10.231.N.1 on the root side, 10.231.N.2 inside). Everything the
 * service reaches on 10.231.N.1 is redirected (DNAT, with route_localnet) to 127.0.0.1 on the same
 * port and source-NATed to 127.0.0.1, so the broker and Postgres keep listening on loopback only and
 * Postgres' `127.0.0.1 trust` rule still applies. Partitions are then real: the link goes down, or
 * packets are dropped on it (iptables), while the test process keeps talking to the
 * broker over loopback. Needs root and iproute2 + iptables; `unavailableReason()` says why not.
 */
export class ServiceNamespace {
  private static nextIndex = 0;
  private readonly rules: string[][] = [];
  private readonly lossProbabilities: string[] = [];
  private disposed = false;

  private constructor(
    readonly name: string,
    /** The root side of the veth pair (where `cut` acts). */
    readonly hostLink: string,
    readonly nsLink: string,
    /** The root namespace's address as the service sees it: use it instead of 127.0.0.1. */
    readonly hostAddress: string,
    readonly nsAddress: string,
  ) {}

  /** Undefined when namespaces can be used here, else why not (for a visible skip). */
  static unavailableReason(): string | undefined {
    if (process.platform !== "linux") return "network namespaces need Linux";
    if (process.getuid?.() !== 0) return "network namespaces need root (run the fault tests as root)";
    for (const [bin, args] of [
      ["ip", ["netns", "list"]],
      ["iptables", ["-t", "nat", "-S", "INPUT"]],
      ["curl", ["--version"]],
    ] as const) {
      const result = spawnSync(bin, args, { stdio: "ignore" });
      if (result.error !== undefined || result.status !== 0)
        return `\`${bin} ${args.join(" ")}\` is unavailable (apt-get install -y iproute2 iptables curl)`;
    }
    if (process.env.TEST_CONTAINERS === "1" || process.env.DOCKER_HOST !== undefined) {
      return "the partition tests need the broker as a local process (TEST_CONTAINERS/DOCKER_HOST set)";
    }
    return undefined;
  }

  static create(label: string): ServiceNamespace {
    // One /30 per namespace; the pid keeps parallel runs apart, the index namespaces of one run.
    const octet = ((process.pid * 7 + ServiceNamespace.nextIndex++) % 250) + 2;
    const tag = `${label.slice(0, 4)}${process.pid % 100_000}${octet}`;
    const ns = new ServiceNamespace(
      `ts-${tag}`,
      `vh${tag}`.slice(0, 15),
      `vn${tag}`.slice(0, 15),
      `10.231.${octet}.1`,
      `10.231.${octet}.2`,
    );
    try {
      ns.setUp();
    } catch (error) {
      ns.dispose();
      throw error;
    }
    return ns;
  }

  private setUp(): void {
    const { name, hostLink, nsLink, hostAddress, nsAddress } = this;
    run("ip", ["netns", "add", name]);
    run("ip", ["link", "add", hostLink, "type", "veth", "peer", "name", nsLink]);
    run("ip", ["link", "set", nsLink, "netns", name]);
    run("ip", ["addr", "add", `${hostAddress}/30`, "dev", hostLink]);
    run("ip", ["link", "set", hostLink, "up"]);
    this.exec(["ip", "addr", "add", `${nsAddress}/30`, "dev", nsLink]);
    this.exec(["ip", "link", "set", nsLink, "up"]);
    this.exec(["ip", "link", "set", "lo", "up"]);
    run("sysctl", ["-q", "-w", `net.ipv4.conf.${hostLink}.route_localnet=1`]);
    // First in their chains, so that no host-port rule of a container runtime catches them.
    this.rule(["-t", "nat", "PREROUTING", "-i", hostLink, "-d", hostAddress, "-p", "tcp", "-j", "DNAT", "--to-destination", "127.0.0.1"]);
    this.rule(["-t", "nat", "INPUT", "-s", nsAddress, "-d", "127.0.0.1", "-p", "tcp", "-j", "SNAT", "--to-source", "127.0.0.1"]);
  }

  private rule(spec: string[]): void {
    const [tableFlag, table, chain, ...rest] = spec;
    run("iptables", [tableFlag!, table!, "-I", chain!, "1", ...rest]);
    this.rules.push([tableFlag!, table!, "-D", chain!, ...rest]);
  }

  /** Runs a command inside the namespace; throws with its output when it fails. */
  exec(command: readonly string[]): string {
    return run("ip", ["netns", "exec", this.name, ...command]);
  }

  /** The command prefix that runs a program inside the namespace (`ip netns exec` then execs it). */
  wrap(command: readonly string[]): string[] {
    return ["ip", "netns", "exec", this.name, ...command];
  }

  /** A URL on the root namespace's loopback, as reached from inside: `nats://127.0.0.1:4222` → 10.231.N.1. */
  reach(url: string): string {
    return url.replace("127.0.0.1", this.hostAddress).replace("localhost", this.hostAddress);
  }

  /** Pulls the cable: the root side of the veth goes down (no RST, no FIN; packets just vanish). */
  cut(): void {
    run("ip", ["link", "set", this.hostLink, "down"]);
  }

  heal(): void {
    run("ip", ["link", "set", this.hostLink, "up"]);
  }

  /** Drops the namespace's TCP traffic to one port only (e.g. Postgres), both ways. */
  dropPort(port: number): void {
    this.exec(["iptables", "-I", "OUTPUT", "1", "-p", "tcp", "--dport", String(port), "-j", "DROP"]);
    this.exec(["iptables", "-I", "INPUT", "1", "-p", "tcp", "--sport", String(port), "-j", "DROP"]);
  }

  undropPort(port: number): void {
    this.exec(["iptables", "-D", "OUTPUT", "-p", "tcp", "--dport", String(port), "-j", "DROP"]);
    this.exec(["iptables", "-D", "INPUT", "-p", "tcp", "--sport", String(port), "-j", "DROP"]);
  }

  /**
   * Random packet loss on the link, both ways (iptables `statistic`, inside the namespace). tc netem
   * would do delay and loss together, but this kernel has no sch_netem: delay comes from DelayProxy.
   */
  loss(percent: number): void {
    const probability = String(percent / 100);
    for (const { chain, match } of this.lossRules(probability)) this.exec(["iptables", "-I", chain, "1", ...match]);
    this.lossProbabilities.push(probability);
  }

  clearLoss(): void {
    for (const probability of this.lossProbabilities.splice(0)) {
      for (const { chain, match } of this.lossRules(probability)) {
        spawnSync("ip", ["netns", "exec", this.name, "iptables", "-D", chain, ...match], { stdio: "ignore" });
      }
    }
  }

  /** The two iptables rules that drop `probability` of the link's packets, one each way. */
  private lossRules(probability: string): { chain: string; match: string[] }[] {
    const match = (dir: string) => [dir, this.nsLink, "-m", "statistic", "--mode", "random", "--probability", probability, "-j", "DROP"];
    return [
      { chain: "OUTPUT", match: match("-o") },
      { chain: "INPUT", match: match("-i") },
    ];
  }

  /**
   * GET `url` from inside the namespace (curl, 2 s timeout): the status code and body, or status 0
   * when nothing answered. Probes the service over its own loopback, which no partition touches.
   */
  async httpGet(url: string, timeoutS = 2): Promise<{ status: number; body: string }> {
    const out = await new Promise<string>((resolve) => {
      execFile(
        "ip",
        ["netns", "exec", this.name, "curl", "-s", "--max-time", String(timeoutS), "-w", "\n%{http_code}", url],
        { encoding: "utf8" },
        (_error, stdout) => resolve(stdout ?? ""),
      );
    });
    const cut = out.lastIndexOf("\n");
    return { status: Number(out.slice(cut + 1)) || 0, body: out.slice(0, Math.max(0, cut)) };
  }

  /** Removes the rules, the veth pair and the namespace (idempotent, never throws). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.clearLoss();
    for (const rule of this.rules.reverse()) spawnSync("iptables", rule, { stdio: "ignore" });
    spawnSync("ip", ["link", "del", this.hostLink], { stdio: "ignore" });
    spawnSync("ip", ["netns", "del", this.name], { stdio: "ignore" });
  }
}

function run(bin: string, args: readonly string[]): string {
  try {
    return execFileSync(bin, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`${bin} ${args.join(" ")} failed: ${e.stderr ?? e.message}`, { cause: error });
  }
}
