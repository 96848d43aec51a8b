"""tests/k8s_health.py: the cluster test's health report and teardown, with fake inputs (no cluster)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.k8s_health import HEALTH_LOGS, checked, cluster_health, health_text, mem_available, run_teardown, tail

MEMINFO = "MemTotal:       16384000 kB\nMemFree:          204800 kB\nMemAvailable:    1048576 kB\n"


@pytest.mark.parametrize(("meminfo", "expected"), [
    (MEMINFO, "1024 MiB"),  # 1048576 kB / 1024, by hand
    ("MemTotal: 1 kB\n", "unknown"),
    ("MemAvailable: lots\n", "unknown"),
    ("", "unknown"),
])
def test_mem_available(meminfo: str, expected: str) -> None:
    assert mem_available(meminfo) == expected


def test_tail_keeps_the_last_lines() -> None:
    text = "\n".join(f"line {i}" for i in range(1, 31))
    assert tail(text).splitlines() == [f"line {i}" for i in range(11, 31)]
    assert tail("a\nb", 20) == "a\nb"


def test_health_text_says_each_part_in_order() -> None:
    etcd = "\n".join(f"etcd {i}" for i in range(1, 26))
    text = health_text(pods="NAME READY\nopensearch-0 0/2\n", status="etcd up\nkube-apiserver down\n",
                       data_dir=Path("/var/cluster"), disk=(10 * 2**30, 9 * 2**30, 2**30), meminfo=MEMINFO,
                       logs={"etcd": etcd, "kube-apiserver": ""})
    assert text.splitlines() == [
        "--- cluster health ---",
        "disk at /var/cluster: 1024 MiB free of 10240 MiB",
        "MemAvailable: 1024 MiB",
        "pods (kubectl get pods -o wide):",
        "NAME READY",
        "opensearch-0 0/2",
        "stack/k8s/cluster.sh status:",
        "etcd up",
        "kube-apiserver down",
        "last 20 lines of etcd.log:",
        *[f"etcd {i}" for i in range(6, 26)],
        "last 20 lines of kube-apiserver.log:",
        "(empty)",
    ]


def test_health_text_names_a_disk_it_could_not_read() -> None:
    text = health_text(pods="", status="", data_dir=Path("/x"), disk="unknown (Permission denied)", meminfo="",
                       logs={})
    assert "disk at /x: unknown (Permission denied)" in text and "(none)" in text and "(nothing)" in text


def test_cluster_health_reads_the_logs_and_survives_probes_that_hang_or_fail(tmp_path: Path) -> None:
    """A hung kubectl and a failing cluster.sh are said in their places; the logs are read from
    <cluster dir>/logs/<component>.log as stack/k8s/lib.sh writes them; a missing one is named."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "etcd.log").write_text("".join(f"etcd said {i}\n" for i in range(100)))
    (tmp_path / "meminfo").write_text(MEMINFO)
    seen: list[list[str]] = []

    def run(argv: Sequence[str], timeout: float) -> str:
        seen.append(list(argv))
        if argv[0] == "kubectl":
            raise subprocess.TimeoutExpired(list(argv), timeout)
        raise FileNotFoundError(2, "No such file or directory", "bash")

    text = cluster_health(tmp_path, tmp_path / "kubeconfig", "ns-1", Path("stack/k8s/cluster.sh"), run=run,
                          meminfo=tmp_path / "meminfo", timeout=7)
    assert [argv[0] for argv in seen] == ["kubectl", "bash"]
    assert seen[0][-6:] == ["-n", "ns-1", "get", "pods", "-o", "wide"]
    assert seen[1] == ["bash", "stack/k8s/cluster.sh", "status"]
    assert "(no answer in 12s: kubectl --kubeconfig" in text  # its own request timeout, plus 5 s
    assert "(failed: [Errno 2] No such file or directory: 'bash')" in text
    assert "MemAvailable: 1024 MiB" in text and f"disk at {tmp_path}: " in text and "MiB free of" in text
    lines = text.splitlines()
    start = lines.index("last 20 lines of etcd.log:")
    assert lines[start + 1:start + 21] == [f"etcd said {i}" for i in range(80, 100)]
    assert HEALTH_LOGS == ("etcd", "kube-apiserver")
    assert f"(cannot read {tmp_path / 'logs' / 'kube-apiserver.log'}: No such file or directory)" in text


def test_teardown_says_a_failure_and_goes_on() -> None:
    ran: list[str] = []

    def fails() -> None:
        ran.append("uninstall")
        raise RuntimeError("release: not found")

    said: list[str] = []
    problems = run_teardown([("helm uninstall", fails), ("delete the namespace", lambda: ran.append("delete"))],
                            say=said.append)
    assert ran == ["uninstall", "delete"]
    assert problems == said == ["teardown: helm uninstall: RuntimeError: release: not found"]


def test_a_teardown_step_with_no_answer_skips_the_rest() -> None:
    ran: list[str] = []

    def hangs() -> None:
        ran.append("uninstall")
        raise subprocess.TimeoutExpired(["helm", "uninstall"], 400)

    said: list[str] = []
    problems = run_teardown([("stop the port-forward", lambda: ran.append("stop")), ("helm uninstall", hangs),
                             ("delete the namespace", lambda: ran.append("delete")),
                             ("recycle the volumes", lambda: ran.append("recycle"))], say=said.append)
    assert ran == ["stop", "uninstall"]
    assert problems == said == ["teardown: helm uninstall: no answer in 400s; skipped delete the namespace, "
                                "recycle the volumes"]


def test_a_checked_step_raises_on_a_non_zero_exit_and_on_no_answer() -> None:
    with pytest.raises(RuntimeError, match=r"^sh -c echo gone >&2; exit 3 \.\.\. exit 3: gone$"):
        checked(["sh", "-c", "echo gone >&2; exit 3"], 10)()
    checked(["true"], 10)()
    with pytest.raises(subprocess.TimeoutExpired):
        checked(["sleep", "5"], 0.2)()
