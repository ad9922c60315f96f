"""Clean, seeded samples of every input format the readers take.

Each :class:`Sample` is a list of physical lines plus its :class:`Record` s: the lines each
record spans and its *unit*, the key (node, job id, component id) of every output row the
record produces. Unit names are random strings that differ in several characters, so that a
one-character mutation rarely turns one record into another's unit (tests also exclude any
unit that appears in the mutated text).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from reliability.ingest import (
    read_dcgm,
    read_health,
    read_kernel_log,
    read_lanl,
    read_node_snapshot,
    read_pod_log,
    read_sacct,
    read_sacctmgr_events,
)

T0 = datetime(2025, 3, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Record:
    """Lines ``[start, stop)`` of a sample (0-based) and the unit of its output rows."""

    start: int
    stop: int
    unit: str


@dataclass
class Sample:
    """A clean input: physical lines, its records, the reader and options to read it."""

    reader: str
    filename: str
    lines: list[str]
    records: list[Record] = field(default_factory=list)
    options: dict[str, object] = field(default_factory=dict)
    #: records the reader must count, when it is not one per Record (sacct counts the
    #: allocation and its step lines; sacctmgr counts cluster-level events)
    n_read: int | None = None

    @property
    def rows_read(self) -> int:
        return len(self.records) if self.n_read is None else self.n_read

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def add(self, lines: list[str], unit: str) -> None:
        start = len(self.lines)
        self.lines.extend(lines)
        self.records.append(Record(start, len(self.lines), unit))


#: reader name -> (function, {table: column holding the unit}); options come with the sample
READERS: dict[str, tuple[Callable[..., object], dict[str, str]]] = {
    "sacct": (read_sacct, {"jobs": "job_id", "job_steps": "job_id"}),
    "events": (read_sacctmgr_events, {"node_states": "node", "health_events": "node"}),
    "scontrol": (read_node_snapshot, {"node_states": "node", "health_events": "node"}),
    "sinfo": (read_node_snapshot, {"node_states": "node", "health_events": "node"}),
    "kernel": (read_kernel_log, {"health_events": "node"}),
    "kernel_syslog": (read_kernel_log, {"health_events": "node"}),
    "dcgm": (read_dcgm, {"health_events": "node"}),
    "health_csv": (read_health, {"health_events": "node"}),
    "health_jsonl": (read_health, {"health_events": "node"}),
    "pod": (
        read_pod_log,
        {
            "inventory": "component_id",
            "component_failures": "component_id",
            "node_states": "node",
            "health_events": "node",
            "jobs": "job_id",
            "job_steps": "job_id",
        },
    ),
    "lanl": (read_lanl, {"component_failures": "component_id", "inventory": "component_id"}),
}


def _name(rng: random.Random, prefix: str) -> str:
    return (
        prefix
        + "".join(rng.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(3))
        + str(rng.randrange(100, 999))
    )


def _names(rng: random.Random, prefix: str, n: int) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        cand = _name(rng, prefix)
        if all(cand not in o and o not in cand for o in out):
            out.append(cand)
    return out


def health_csv(seed: int = 0, n: int = 24) -> Sample:
    rng = random.Random(seed)
    s = Sample("health_csv", "health.csv", ["cluster,node,time,source,component,code,severity,device,message"],
               options={"cluster": "c1"})  # fmt: skip
    for i, node in enumerate(_names(rng, "gpu-", n)):
        t = (T0 + timedelta(minutes=7 * i)).isoformat().replace("+00:00", "Z")
        comp, code, sev = rng.choice(
            [("gpu", "79", "critical"), ("dimm", "DIMM_CE", "warning"), ("nic", "LINK", "info")]
        )
        if i % 6 == 5:  # a quoted message over two lines
            s.add(
                [f'c1,{node},{t},health_check,{comp},{code},{sev},,"first line,', 'second line"'],
                node,
            )
        elif i % 3 == 1:
            s.add(
                [f'c1,{node},{t},ticket,{comp},{code},{sev},0000:3b:00,"replaced, ""really"""'],
                node,
            )
        else:
            s.add([f"c1,{node},{t},health_check,{comp},{code},{sev},,check {i}"], node)
    return s


def health_jsonl(seed: int = 0, n: int = 24) -> Sample:
    rng = random.Random(seed)
    s = Sample("health_jsonl", "health.jsonl", [])
    for i, node in enumerate(_names(rng, "gpu-", n)):
        t = (T0 + timedelta(minutes=5 * i)).isoformat()
        obj = {"cluster": "c1", "node": node, "time": t, "source": "health_check",
               "component": "gpu", "code": str(40 + i), "severity": "warning",
               "device": None if i % 2 else f"gpu{i % 8}", "message": f"check {i}"}  # fmt: skip
        s.add([json.dumps(obj)], node)
    return s


def dcgm(seed: int = 0, hosts: int = 8, scrapes: int = 3) -> Sample:
    rng = random.Random(seed)
    names = _names(rng, "dgx-", hosts)
    s = Sample("dcgm", "scrape.prom", [], options={"cluster": "c1", "node": "fallback-node"})
    dbe = {h: rng.randrange(0, 3) for h in names}
    xid = dict.fromkeys(names, 0)
    for k in range(scrapes):
        s.lines.append(f"# scraped_at {(T0 + timedelta(minutes=k)).isoformat()}")
        s.lines.append("# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter")
        for h in names:
            dbe[h] += rng.choice([0, 0, 1, 2])
            lab = f'gpu="0",UUID="GPU-{h}",Hostname="{h}"'
            s.add([f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{lab}}} {dbe[h]}"], h)
            if rng.random() < 0.3:
                xid[h] = rng.choice([0, 48, 79, 94])
            s.add([f"DCGM_FI_DEV_XID_ERRORS{{{lab}}} {xid[h]}"], h)
            s.add([f"DCGM_FI_DEV_GPU_TEMP{{{lab}}} {rng.randrange(30, 80)}"], h)
    return s


def kernel(seed: int = 0, n: int = 20) -> Sample:
    """RFC 3339 kernel lines with host names (rsyslog), Xid and SXid records and noise."""
    rng = random.Random(seed)
    s = Sample("kernel", "kern.log", [], options={"cluster": "c1", "node": "fallback-node"})
    for i, host in enumerate(_names(rng, "node-", n)):
        t = (T0 + timedelta(seconds=37 * i)).isoformat(timespec="microseconds")
        s.lines.append(f"{t} {host} kernel: usb 1-1: new high-speed USB device number {i}")
        if i % 4 == 3:
            s.add([f"{t} {host} kernel: nvidia-nvswitch{i % 4}: SXid (PCI:0000:0{i % 8}:00.0): 20034, Fatal, Link {i} LTSSM Fault Up"], host)  # fmt: skip
        else:
            code = rng.choice([13, 31, 48, 63, 79, 94, 119])
            s.add([f"{t} {host} kernel: NVRM: Xid (PCI:0000:{rng.randrange(16, 255):02x}:00): {code}, pid={rng.randrange(1, 99999)}, name=python, event {i}"], host)  # fmt: skip
    return s


def kernel_syslog(seed: int = 0, n: int = 16) -> Sample:
    """Syslog lines (no year) that cross New Year: Dec 30 ... Jan 2."""
    rng = random.Random(seed)
    s = Sample("kernel_syslog", "syslog", [], options={"cluster": "c1", "tz": "UTC", "year": 2024})
    start = datetime(2024, 12, 30, 22, 0)
    for i, host in enumerate(_names(rng, "node-", n)):
        t = start + timedelta(hours=4 * i)
        stamp = f"{t:%b} {t.day:2d} {t:%H:%M:%S}"
        s.add([f"{stamp} {host} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus."], host)  # fmt: skip
    return s


def events(seed: int = 0, n: int = 16) -> Sample:
    rng = random.Random(seed)
    s = Sample("events", "sacctmgr_event.psv", ["Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User"],
               options={"tz": "UTC"})  # fmt: skip
    s.lines.append("c1||2025-03-01T00:00:00|Unknown||Cluster Registered TRES|")
    reasons = ["GPU ECC errors <xid 79> on gpu:1", "Not responding", "maintenance: bad DIMM | ticket #1",
               "Xid 48", "Kill task failed", "NVLink down on gpu 3", "PSU failure"]  # fmt: skip
    for i, node in enumerate(_names(rng, "node-", n)):
        a = T0 + timedelta(minutes=11 * i)
        end = "Unknown" if i % 5 == 4 else f"{a + timedelta(minutes=3):%Y-%m-%dT%H:%M:%S}"
        state = rng.choice(["DRAIN", "DOWN", "DOWN*", "FAIL"])
        s.add(
            [f"c1|{node}|{a:%Y-%m-%dT%H:%M:%S}|{end}|{state}|{rng.choice(reasons)}|root(0)"], node
        )
    s.n_read = n + 1  # + the cluster-level event
    return s


def scontrol(seed: int = 0, n: int = 10) -> Sample:
    rng = random.Random(seed)
    s = Sample("scontrol", "scontrol_show_node.txt", ["$ scontrol show node"],
               options={"cluster": "c1", "tz": "UTC"})  # fmt: skip
    for i, node in enumerate(_names(rng, "node-", n)):
        state = rng.choice(["IDLE", "IDLE+DRAIN", "DOWN*+DRAIN", "MIXED", "ALLOCATED+DRAIN"])
        block = [f"NodeName={node} Arch=x86_64 CoresPerSocket=4", "   CPUAlloc=0 CPUTot=8",
                 f"   State={state} ThreadsPerCore=1", "   Partitions=gpu"]  # fmt: skip
        if state != "IDLE" and state != "MIXED":
            when = T0 + timedelta(minutes=13 * i)
            why = rng.choice(["GPU ECC errors <xid 79> on gpu:1", "Kill task failed", "Xid 94"])
            block.append(f"   Reason={why} [root@{when:%Y-%m-%dT%H:%M:%S}]")
        s.add(block, node)
    return s


def sinfo(seed: int = 0, n: int = 10) -> Sample:
    rng = random.Random(seed)
    s = Sample("sinfo", "sinfo_R.txt", ["REASON               USER      TIMESTAMP           NODELIST"],
               options={"cluster": "c1", "tz": "UTC"})  # fmt: skip
    for i, node in enumerate(_names(rng, "node-", n)):
        when = T0 + timedelta(minutes=9 * i)
        why = rng.choice(["GPU ECC errors <xid ", "Not responding", "Kill task failed    "])
        s.add([f"{why:<20} root      {when:%Y-%m-%dT%H:%M:%S} {node}"], node)
    return s


def sacct(seed: int = 0, n: int = 12) -> Sample:
    rng = random.Random(seed)
    s = Sample("sacct", "sacct.psv",
               ["JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"],
               options={"tz": "UTC"})  # fmt: skip
    nodes = _names(rng, "node-", 6)
    for i in range(n):
        jid = str(rng.randrange(10**6, 10**7))
        while any(jid in r.unit or r.unit in jid for r in s.records):
            jid = str(rng.randrange(10**6, 10**7))
        sub = T0 + timedelta(minutes=17 * i)
        st, en = sub + timedelta(minutes=2), sub + timedelta(minutes=60)
        state = rng.choice(["COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT"])
        node = rng.choice(nodes)
        gpus = rng.choice([0, 1, 8])
        tres = (
            f"billing=8,cpu=8,gres/gpu={gpus},mem=64G,node=1"
            if gpus
            else "billing=8,cpu=8,mem=64G,node=1"
        )
        user = _name(rng, "u")
        ts = [f"{t:%Y-%m-%dT%H:%M:%S}" for t in (sub, st, en)]
        s.add(
            [f"{jid}|{jid}|job {i}, name|{user}|acct{i % 3}|gpu|{state}|0:0|{'|'.join(ts)}|1|{tres}|{node}|c1",
             f"{jid}.batch|{jid}.batch|batch||acct{i % 3}||{state}|0:0|{'|'.join(ts)}|1|{tres}|{node}|c1"],
            jid,
        )  # fmt: skip
    s.n_read = 2 * n
    return s


def pod(seed: int = 0, n: int = 10) -> Sample:
    rng = random.Random(seed)
    s = Sample("pod", "pod_events.jsonl", [], options={"cluster": "pod1"})
    for i, host in enumerate(_names(rng, "c", n)):
        t = T0 + timedelta(hours=i)
        lines = [json.dumps({"time": t.isoformat(), "event": "inventory", "component_type": "machine", "component_id": host})]  # fmt: skip
        if i % 2 == 0:
            lines.append(json.dumps({"time": (t + timedelta(minutes=5)).isoformat(), "event": "healthd",
                                     "component_type": "machine", "component_id": host, "detail": "machine_unhealthy"}))  # fmt: skip
        for line in lines:
            s.add([line], host)
    for k, job in enumerate(_names(rng, "job", 3)):  # a job's events: submit, start, end
        t = T0 + timedelta(hours=n + k)
        for dt, event, detail in [(0, "job_submit", "prio=prod"), (5, "job_start", f"attempt=0;cubes={k + 1}"),
                                  (6, "crossconnect", "changed=2"), (50, "job_end", "state=COMPLETED")]:  # fmt: skip
            s.add([json.dumps({"time": (t + timedelta(minutes=dt)).isoformat(), "event": event,
                               "component_type": "job", "component_id": job, "detail": detail})], job)  # fmt: skip
    return s


def lanl(seed: int = 0, n: int = 10) -> Sample:
    rng = random.Random(seed)
    header = ("System,machine type,nodes,procstot,procsinnode,nodenum,nodenumz,node install,node prod,"
              "node decom,fru type,mem,cputype,memtype,num intercon,purpose,Prob Started,Prob Fixed,"
              "Down Time,Facilities,Hardware,Human Error,Network,Undetermined,Software,Same Event")  # fmt: skip
    s = Sample("lanl", "lanl.csv", [header])
    for i in range(n):
        node = str(rng.randrange(10_000, 99_999))
        while any(node in r.unit or r.unit in node for r in s.records):
            node = str(rng.randrange(10_000, 99_999))
        a = datetime(2003, 1, 1) + timedelta(
            days=rng.randrange(0, 700), minutes=rng.randrange(0, 1440)
        )
        b = a + timedelta(minutes=rng.randrange(1, 600))
        fmt = lambda t: f"{t.month}/{t.day}/{t.year} {t.hour}:{t.minute:02d}"  # noqa: E731
        s.add([f"7,smp,128,1024,8,{i},{node},2-Jan,2-Mar,current,part,8,1,1,0,compute,{fmt(a)},{fmt(b)},"
               f"{int((b - a).total_seconds() // 60)},,Memory Dimm,,,,,No"], node)  # fmt: skip
    return s


#: every sample generator, by reader name
GENERATORS: dict[str, Callable[..., Sample]] = {
    "sacct": sacct,
    "events": events,
    "scontrol": scontrol,
    "sinfo": sinfo,
    "kernel": kernel,
    "kernel_syslog": kernel_syslog,
    "dcgm": dcgm,
    "health_csv": health_csv,
    "health_jsonl": health_jsonl,
    "pod": pod,
    "lanl": lanl,
}
