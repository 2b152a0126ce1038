"""Where each real Trino of the lab comes from (standard library only; used by realtrino).

Two servers, both from Maven Central (the only registry that publishes them). Every file a
server is made of is pinned in a lock file beside this one, `trino-<version>.lock`: its
coordinates, where it goes, and the SHA-1 Maven Central publishes for it. A first start
fetches those files straight from Maven Central, several at a time, into
`$FLOE_CACHE_DIR/trino/m2` (laid out as a Maven repository), each checked against its pinned
SHA-1, and lays the server out once under `$FLOE_CACHE_DIR/trino/<version>/server-<recipe>`
(the recipe's hash, the lock's content in it, in the name: a change of recipe or of pins
builds beside an older layout, never over it):

- **476**, the last release whose server tarball Maven Central serves:
  `io.trino:trino-server-core:476:tar.gz` with `io.trino:trino-iceberg:476:zip` unpacked into
  `plugin/iceberg`; every plugin but the Iceberg connector and the password authenticators
  removed.
- **483**, the newest release, whose tarball is not served: assembled from its jars as the
  release lays them out. `lib/` is `io.trino:trino-main` with its runtime dependencies;
  `plugin/iceberg` is `io.trino:trino-iceberg` with its runtime dependencies minus what its
  own POM marks `provided` (the server provides those to plugins), plus the services file the
  release adds in a jar of its own; `bin/` is airlift's launcher (the version Trino's parent
  POM names) pointed at a main class of a few lines that starts `io.trino.server.Server` with
  the version, compiled here with the JDK that runs it.

Maven is needed only to write the lock files (`python3 tests/lab/trinodist.py lock 476|483`):
resolving 483's dependency graph (a throwaway POM importing `io.trino:trino-root:483` as a
BOM, `mvn dependency:list`, one POM at a time: 16 min cold on a loaded machine) is Maven's
own work, which this module does not redo; fetching the resolved files is not.

Trino's password authenticators plugin was never published to Maven Central (the release
bundles it): both servers load it from the 476 release tarball (its SPI, a
`PasswordAuthenticatorFactory` named `file`, is unchanged since).

The Delta Lake connector is served on Maven Central only as 449 (`io.trino:trino-delta-lake`:
no 476 or 483 jar, zip or POM), and a plugin runs only on its own release: 476 takes its
`plugin/delta-lake` from the full release tarball `io.trino:trino-server:476:tar.gz` (821 MB,
the core tarball holds no connector). No Delta Lake plugin of 483 is served, so 483 runs
without one.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import hashlib
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Maven Central (a mirror of it with `$FLOE_MAVEN_URL`): where every pinned file is fetched.
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
# Files fetched at once: a cold 483 is ~520 files, most of them small.
FETCH_THREADS = 8
FETCH_ATTEMPTS = 3

SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.50.3.0:jar"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
# The 476 release tarball: the server of 476 and the source of the password plugin for both.
RELEASE_TARBALL = "io.trino:trino-server-core:476:tar.gz"
PASSWORD_PLUGIN = "password-authenticators"
# The full 476 release tarball: the source of the Delta Lake plugin of 476 (see above).
FULL_TARBALL = "io.trino:trino-server:476:tar.gz"
DELTA_PLUGIN = "delta-lake"
# Plugins a release server keeps: the Iceberg connector, the password file authenticator
# (file-based access control is built into the server).
KEEP_PLUGINS = ("iceberg", PASSWORD_PLUGIN)
# Bumped when a layout built by an earlier recipe must not be reused.
RECIPE_FORMAT = 2

# version -> (lowest JDK feature version, how it is obtained)
SERVERS = {
    "476": (24, "release"),
    "483": (25, "assembled"),
}
DEFAULT_VERSION = "476"

# Where a pinned file goes (the lock's first column):
ROLES = {
    "server": "the release tarball, unpacked as the server (476)",
    "plugin-zip": "the Iceberg plugin's zip, unpacked into plugin/iceberg (476)",
    "lib": "a jar of the server's classpath, into lib/ (483)",
    "plugin": "a jar of the Iceberg plugin, into plugin/iceberg",
    "launcher": "airlift's launcher tarballs, unpacked at the server's root (483)",
    "password": "the 476 release tarball, whose plugin/password-authenticators both servers load",
    "delta": "the full 476 release tarball, whose plugin/delta-lake the 476 server loads",
}

# The main class of an assembled server (the release's own, io.trino.server.TrinoServer in
# trino-server-main, is not published): the version comes from its jar's manifest.
MAIN_CLASS = "floe.lab.TrinoMain"
MAIN_SOURCE = """package floe.lab;

public final class TrinoMain
{
    private TrinoMain() {}

    public static void main(String[] args)
    {
        String version = TrinoMain.class.getPackage().getImplementationVersion();
        new io.trino.server.Server().start(version == null ? "unknown" : version);
    }
}
"""
PLUGIN_CLASSES = {
    "iceberg": "io.trino.plugin.iceberg.IcebergPlugin",
}


class TrinoSetupError(Exception):
    pass


# ---------------------------------------------------------------------------- Java
def jdk_major(home: Path) -> int | None:
    """The feature version of the JDK at `home`, from its `release` file (else `java -version`)."""
    release = home / "release"
    try:
        m = re.search(r'^JAVA_VERSION="(\d+)', release.read_text(), re.M)
        if m:
            return int(m.group(1))
    except OSError:
        pass
    java = home / "bin" / "java"
    if not java.exists():
        return None
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=20).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)', out)
    return int(m.group(1)) if m else None


def find_jdks() -> list[tuple[int, Path]]:
    """Every JDK found on the machine, newest first: $FLOE_LAB_JAVA_HOME, $JAVA_HOME, the
    directories under /usr/lib/jvm, and the `java` on PATH."""
    candidates: list[Path] = []
    for var in ("FLOE_LAB_JAVA_HOME", "JAVA_HOME"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]))
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates.extend(sorted(p for p in jvm.iterdir() if p.is_dir() and not p.is_symlink()))
    java = shutil.which("java")
    if java:
        candidates.append(Path(os.path.realpath(java)).parent.parent)
    seen: set[Path] = set()
    out: list[tuple[int, Path]] = []
    for c in candidates:
        c = c.resolve()
        if c in seen or not (c / "bin" / "java").exists():
            continue
        seen.add(c)
        major = jdk_major(c)
        if major is not None:
            out.append((major, c))
    out.sort(key=lambda t: -t[0])
    return out


def choose_jdk(version: str) -> tuple[Path, int]:
    """(JDK home, feature version) to run Trino `version`: the newest JDK found, which must
    be at least the one that release targets."""
    if version not in SERVERS:
        raise TrinoSetupError(f"the lab runs Trino {', '.join(SERVERS)}, not {version!r}")
    lowest = SERVERS[version][0]
    jdks = find_jdks()
    if not jdks or jdks[0][0] < lowest:
        found = f"the newest JDK found is {jdks[0][0]} at {jdks[0][1]}" if jdks else "no JDK was found"
        raise TrinoSetupError(
            f"Trino {version} needs a JDK {lowest} or newer and {found} (looked at $FLOE_LAB_JAVA_HOME, "
            "$JAVA_HOME, /usr/lib/jvm/* and `java` on PATH): install one (Debian: apt-get install "
            "openjdk-25-jdk-headless) or set FLOE_LAB_JAVA_HOME to it")
    major, home = jdks[0]
    return home, major


# ---------------------------------------------------------------------------- the lock files
class Pin:
    """One line of a lock file: `role group:artifact:version:type[:classifier] sha1 size`."""

    def __init__(self, role: str, coords: str, sha1: str, size: int):
        if role not in ROLES:
            raise TrinoSetupError(f"unknown role {role!r} (one of {', '.join(ROLES)})")
        if len(coords.split(":")) not in (4, 5):
            raise TrinoSetupError(f"{coords!r} is not group:artifact:version:type[:classifier]")
        if not re.fullmatch(r"[0-9a-f]{40}", sha1):
            raise TrinoSetupError(f"{coords}: {sha1!r} is not a SHA-1")
        self.role, self.coords, self.sha1, self.size = role, coords, sha1, size

    def line(self) -> str:
        return f"{self.role} {self.coords} {self.sha1} {self.size}"

    def url(self, base: str) -> str:
        return base.rstrip("/") + "/" + relative_path(self.coords)


def lock_path(version: str) -> Path:
    return HERE / f"trino-{version}.lock"


def read_lock(version: str) -> list[Pin]:
    path = lock_path(version)
    if not path.exists():
        raise TrinoSetupError(f"{path} is missing: `python3 tests/lab/trinodist.py lock {version}` writes it")
    pins = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 4 or not parts[3].isdigit():
            raise TrinoSetupError(f"{path}:{n}: not `role coordinates sha1 size`: {line!r}")
        try:
            pins.append(Pin(parts[0], parts[1], parts[2], int(parts[3])))
        except TrinoSetupError as e:
            raise TrinoSetupError(f"{path}:{n}: {e}") from None
    if not pins:
        raise TrinoSetupError(f"{path} pins nothing")
    return pins


# ---------------------------------------------------------------------------- fetching
def relative_path(coords: str) -> str:
    """`group:artifact:version:type[:classifier]` as a path of a Maven repository."""
    parts = coords.split(":")
    group, artifact, version, kind = parts[:4]
    classifier = f"-{parts[4]}" if len(parts) > 4 else ""
    return "/".join([*group.split("."), artifact, version, f"{artifact}-{version}{classifier}.{kind}"])


def artifact_path(repo: Path, coords: str) -> Path:
    """Where `group:artifact:version:type[:classifier]` lies in the Maven repository `repo`."""
    return repo / relative_path(coords)


def sha1_of(path: Path) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def maven_url() -> str:
    return os.environ.get("FLOE_MAVEN_URL") or MAVEN_CENTRAL


class Fetcher:
    """GETs from one Maven repository URL, over one kept-alive connection per thread: a
    cold 483 is ~440 files, most of them small, and a TLS handshake for each cost more than
    the files (measured at load 17 on 2 cores, 8 threads: 54 s with a connection per file,
    8 s kept alive). Through urllib, one connection per file, when a proxy is configured."""

    def __init__(self, base: str):
        self.base = base.rstrip("/")
        parts = urllib.parse.urlsplit(self.base)
        self.scheme, self.host, self.prefix = parts.scheme, parts.netloc, parts.path
        proxied = urllib.request.getproxies().get(self.scheme) and not urllib.request.proxy_bypass(
            parts.hostname or "")
        self.keep_alive = self.scheme in ("http", "https") and not proxied
        self.local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        c = getattr(self.local, "conn", None)
        if c is None:
            if self.scheme == "https":
                c = http.client.HTTPSConnection(self.host, timeout=60, context=ssl.create_default_context())
            else:
                c = http.client.HTTPConnection(self.host, timeout=60)
            self.local.conn = c
        return c

    def _drop(self) -> None:
        c = getattr(self.local, "conn", None)
        if c is not None:
            c.close()
            self.local.conn = None

    @contextlib.contextmanager
    def get(self, rel: str):
        """The answer to GET `rel` (a readable with `.status`); raises on anything but 200."""
        url = f"{self.base}/{rel}"
        if not self.keep_alive:
            req = urllib.request.Request(url, headers={"User-Agent": "floe-lab-trinodist"})
            with urllib.request.urlopen(req, timeout=60) as r:
                yield r
            return
        c = self._connection()
        try:
            c.request("GET", f"{self.prefix}/{rel}", headers={"User-Agent": "floe-lab-trinodist"})
            r = c.getresponse()
        except (OSError, http.client.HTTPException):
            self._drop()
            raise
        if r.status != 200:
            r.read()
            raise urllib.error.HTTPError(url, r.status, r.reason, r.headers, None)
        try:
            yield r
        except BaseException:
            self._drop()
            raise
        if not r.isclosed():
            self._drop()


def fetch_pin(pin: Pin, repo: Path, fetcher: Fetcher) -> int:
    """`pin`'s file in `repo`, fetched unless a copy with its SHA-1 is there already; the
    bytes fetched. A download is written beside its place and renamed there only once its
    SHA-1 is the pinned one, so a half-fetched or wrong file is never used."""
    path = artifact_path(repo, pin.coords)
    if path.exists():
        if sha1_of(path) == pin.sha1:
            return 0
        bad = path.with_name(path.name + ".corrupt")
        path.replace(bad)
    path.parent.mkdir(parents=True, exist_ok=True)
    url = pin.url(fetcher.base)
    part = path.with_name(f"{path.name}.part-{os.getpid()}-{threading.get_ident()}")
    problem = ""
    for attempt in range(1, FETCH_ATTEMPTS + 1):
        try:
            h = hashlib.sha1()
            got = 0
            with fetcher.get(relative_path(pin.coords)) as r, open(part, "wb") as out:
                for chunk in iter(lambda: r.read(1 << 20), b""):
                    h.update(chunk)
                    out.write(chunk)
                    got += len(chunk)
            if h.hexdigest() == pin.sha1:
                part.replace(path)
                return got
            problem = (f"SHA-1 {h.hexdigest()} ({got} bytes) is not the pinned {pin.sha1} "
                       f"({pin.size} bytes)")
        except urllib.error.HTTPError as e:
            problem = f"HTTP {e.code} {e.reason}"
            if e.code == 404:
                break
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            problem = f"{type(e).__name__}: {e}"
        part.unlink(missing_ok=True)
        if attempt < FETCH_ATTEMPTS:
            time.sleep(attempt)
    part.unlink(missing_ok=True)
    raise TrinoSetupError(f"fetching {pin.coords} from {url}: {problem}")


def fetch_pins(pins: list[Pin], repo: Path, say=lambda _m: None) -> tuple[int, dict[str, Path]]:
    """Every pinned file in `repo`, the missing ones fetched `FETCH_THREADS` at a time, the
    largest first: (bytes fetched, coordinates -> path)."""
    unique = sorted({p.coords: p for p in pins}.values(), key=lambda p: -p.size)
    fetcher = Fetcher(maven_url())
    repo.mkdir(parents=True, exist_ok=True)
    t = time.monotonic()
    fetched = 0
    errors = []
    with concurrent.futures.ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="fetch") as pool:
        futures = [pool.submit(fetch_pin, p, repo, fetcher) for p in unique]
        for f in concurrent.futures.as_completed(futures):
            try:
                fetched += f.result()
            except TrinoSetupError as e:
                errors.append(str(e))
    if errors:
        raise TrinoSetupError(f"{len(errors)} of {len(unique)} pinned files could not be fetched:\n"
                              + "\n".join(errors[:10]))
    say(f"{fetched / 2**20:.0f} MiB fetched from {fetcher.base} in {time.monotonic() - t:.1f} s "
        f"({len(unique)} distinct files pinned, each checked against its pinned SHA-1)")
    return fetched, {p.coords: artifact_path(repo, p.coords) for p in unique}


@contextlib.contextmanager
def locked(path: Path):
    """An exclusive lock on `path` (created), held while the block runs: two labs (or two
    servers of one lab) never build one server at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


# ---------------------------------------------------------------------------- layouts
def recipe_key(version: str) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([RECIPE_FORMAT, version, SERVERS[version], KEEP_PLUGINS, MAIN_SOURCE,
                         [p.line() for p in read_lock(version)]]).encode())
    return h.hexdigest()[:12]


def server_dir(cache: Path, version: str) -> Path:
    return cache / "trino" / version / f"server-{recipe_key(version)}"


def ensure_server(cache: Path, version: str, jdk: Path, say) -> tuple[Path, dict]:
    """The server for `version`, laid out once under `server_dir`: its path and what it took
    (`downloaded_bytes`: the files fetched for it this time, `download_s`, `build_s`,
    `cached`)."""
    server = server_dir(cache, version)
    with locked(server.parent / f".{server.name}.lock"):
        return _ensure_server(server, cache, version, jdk, say)


def _ensure_server(server: Path, cache: Path, version: str, jdk: Path, say) -> tuple[Path, dict]:
    marker = server / ".floe-complete"
    if marker.exists():
        facts = json.loads(marker.read_text() or "{}")
        return server, {**facts, "cached": True}
    repo = cache / "trino" / "m2"
    tmp = server.parent / f".{server.name}.building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t = time.monotonic()
    try:
        pins = read_lock(version)
        say(f"real trino {version}: fetching the {len(pins)} files {lock_path(version).name} pins (once)")
        fetched, paths = fetch_pins(pins, repo, lambda m: say(f"real trino {version}: {m}"))
        download_s = time.monotonic() - t
        by_role: dict[str, list[Path]] = {}
        for p in pins:
            by_role.setdefault(p.role, []).append(paths[p.coords])
        if SERVERS[version][1] == "release":
            build_release(by_role, tmp)
        else:
            build_assembled(version, by_role, tmp, jdk)
        copy_jars(by_role.get("plugin", []), tmp / "plugin" / "iceberg")
        add_password_plugin(tmp, by_role)
        if by_role.get("delta"):
            add_plugin_from(tmp, one(by_role, "delta"), DELTA_PLUGIN)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    facts = {"downloaded_bytes": fetched, "download_s": round(download_s, 1),
             "build_s": round(time.monotonic() - t, 1), "version": version, "recipe": recipe_key(version)}
    (tmp / ".floe-complete").write_text(json.dumps(facts))
    if server.exists():
        shutil.rmtree(server)
    tmp.rename(server)
    return server, {**facts, "cached": False}


def one(by_role: dict[str, list[Path]], role: str) -> Path:
    files = by_role.get(role) or []
    if len(files) != 1:
        raise TrinoSetupError(f"the lock pins {len(files)} files as {role!r} ({ROLES[role]}), not one")
    return files[0]


def build_release(by_role: dict[str, list[Path]], out: Path) -> None:
    """A release server: its tarball unpacked (GNU tar: it is full of hard links), the
    Iceberg plugin's zip into `plugin/iceberg`, every other plugin but the password one removed."""
    subprocess.run(["tar", "-xzf", str(one(by_role, "server")), "-C", str(out), "--strip-components=1"],
                   check=True)
    with zipfile.ZipFile(one(by_role, "plugin-zip")) as z:
        z.extractall(out / ".iceberg-zip")
    (top,) = list((out / ".iceberg-zip").iterdir())
    top.rename(out / "plugin" / "iceberg")
    shutil.rmtree(out / ".iceberg-zip")
    for p in (out / "plugin").iterdir():
        if p.name not in KEEP_PLUGINS:
            shutil.rmtree(p)


def build_assembled(version: str, by_role: dict[str, list[Path]], out: Path, jdk: Path) -> None:
    """A server laid out as the release does, from its jars (see the module's docstring)."""
    copy_jars(by_role.get("lib", []), out / "lib")
    (out / "plugin" / "iceberg").mkdir(parents=True)
    services_jar(out / "plugin" / "iceberg" / f"trino-iceberg-{version}-services.jar", PLUGIN_CLASSES["iceberg"])
    # `bin`: the launcher's binaries; `properties`: its wrapper script and properties file
    launchers = by_role.get("launcher", [])
    if len(launchers) != 2:
        raise TrinoSetupError(f"the lock pins {len(launchers)} launcher tarballs, not its bin and properties")
    for tarball in launchers:
        subprocess.run(["tar", "-xzf", str(tarball), "-C", str(out)], check=True)
    (out / "bin" / "launcher.properties").write_text(
        f"main-class={MAIN_CLASS}\nprocess-name=trino-server\n")
    main_jar(version, out, jdk)


def copy_jars(paths: list[Path], into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    for p in paths:
        target = into / p.name
        if target.exists():
            raise TrinoSetupError(f"two artifacts named {p.name} for {into}: {p} and the one copied before")
        shutil.copy2(p, target)


# A fixed time for the entries of the jars built here, so a rebuild is byte for byte the same.
JAR_TIME = (2026, 1, 1, 0, 0, 0)


def services_jar(path: Path, plugin_class: str) -> None:
    """The jar the release adds to a plugin's directory: the plugin's ServiceLoader entry."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", JAR_TIME), "Manifest-Version: 1.0\n\n")
        z.writestr(zipfile.ZipInfo("META-INF/services/io.trino.spi.Plugin", JAR_TIME), plugin_class + "\n")


def main_jar(version: str, out: Path, jdk: Path) -> None:
    """The main class, compiled against the assembled `lib/` by the JDK that runs it, in a jar
    whose manifest carries the version the server reports."""
    work = Path(tempfile.mkdtemp(prefix="main-", dir=out.parent))
    try:
        src = work / "src" / "floe" / "lab" / "TrinoMain.java"
        src.parent.mkdir(parents=True)
        src.write_text(MAIN_SOURCE)
        classes = work / "classes"
        proc = subprocess.run([str(jdk / "bin" / "javac"), "-cp", str(out / "lib" / "*"), "-d", str(classes),
                               str(src)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise TrinoSetupError(f"javac of the assembled server's main class failed: {proc.stderr[-2000:]}")
        (work / "MANIFEST.MF").write_text(
            f"Implementation-Title: trino-server\nImplementation-Version: {version}\n")
        stamp = "%04d-%02d-%02dT%02d:%02d:%02dZ" % JAR_TIME
        proc = subprocess.run([str(jdk / "bin" / "jar"), "--create", "--date", stamp, "--file",
                               str(out / "lib" / f"floe-lab-trino-main-{version}.jar"),
                               "--manifest", str(work / "MANIFEST.MF"), "-C", str(classes), "."],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise TrinoSetupError(f"jar of the assembled server's main class failed: {proc.stderr[-2000:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def add_password_plugin(out: Path, by_role: dict[str, list[Path]]) -> None:
    """The password file authenticator, from the 476 release tarball (see the docstring)."""
    add_plugin_from(out, one(by_role, "password"), PASSWORD_PLUGIN)


def add_plugin_from(out: Path, tarball: Path, plugin: str) -> None:
    """`plugin/<plugin>` of the release tarball `tarball` into the server `out`."""
    target = out / "plugin" / plugin
    if target.exists():
        return
    # the tarball's plugin files are hard links to the server's own (lib/, other plugins):
    # unpack it whole
    work = Path(tempfile.mkdtemp(prefix="release-", dir=out.parent))
    try:
        subprocess.run(["tar", "-xzf", str(tarball), "-C", str(work), "--strip-components=1"], check=True)
        source = work / "plugin" / plugin
        if not source.is_dir():
            raise TrinoSetupError(f"{tarball}: no plugin/{plugin} in it")
        shutil.move(str(source), str(target))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------- writing the locks (Maven)
def mvn_bin() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise TrinoSetupError("`mvn` is not on PATH: it resolves what the lock files pin "
                              "(Debian: apt-get install maven)")
    return mvn


def run_mvn(args: list[str], repo: Path, log: Path, what: str, cwd: Path | None = None) -> None:
    """`mvn` in batch mode on the repository `repo`, failing on a checksum mismatch (`-C`)."""
    with open(log, "ab") as out:
        out.write(f"\n# {time.strftime('%Y-%m-%d %H:%M:%S')} {what}\n".encode())
        out.flush()
        proc = subprocess.run(
            [mvn_bin(), "-B", "-C", "--no-transfer-progress", f"-Dmaven.repo.local={repo}",
             "-Daether.connector.basic.threads=8", *args],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=3600,
            cwd=str(cwd) if cwd else None)
    if proc.returncode != 0:
        raise TrinoSetupError(f"mvn could not {what} (exit {proc.returncode}); see {log}:\n"
                              + log.read_text(errors="replace")[-2000:])


def published_sha1(path: Path) -> str:
    """`path`'s SHA-1 as Maven Central publishes it (the `.sha1` Maven fetched beside it,
    `-C`), which the file must have."""
    sha1 = path.with_name(path.name + ".sha1")
    if not sha1.exists():
        raise TrinoSetupError(f"{path}: Maven fetched no checksum beside it ({sha1.name})")
    text = sha1.read_text().split()
    want = text[0].strip().lower() if text else ""
    got = sha1_of(path)
    if got != want:
        raise TrinoSetupError(f"{path}: SHA-1 {got} is not the published {want!r}")
    return want


def mvn_get(coords: str, repo: Path, log: Path) -> Path:
    """The artifact `coords` fetched into `repo` by `mvn dependency:get` (with its `.sha1`)."""
    path = artifact_path(repo, coords)
    if not (path.exists() and path.with_name(path.name + ".sha1").exists()):
        run_mvn([f"{DEPENDENCY_PLUGIN}:get", "-Dtransitive=false", f"-Dartifact={coords}"], repo, log,
                f"fetch {coords}")
    if not path.exists():
        raise TrinoSetupError(f"mvn fetched {coords} but {path} is not there; see {log}")
    return path


def mvn_resolve(pom: Path, repo: Path, log: Path, what: str) -> list[str]:
    """The coordinates of every runtime artifact of the throwaway POM `pom` (its
    dependencies, transitively), resolved into `repo` by `mvn dependency:list`."""
    listing = pom.with_name("resolved.txt")
    run_mvn(["-f", str(pom), f"{DEPENDENCY_PLUGIN}:list", "-DincludeScope=runtime",
             "-DoutputAbsoluteArtifactFilename=true", f"-DoutputFile={listing}", "-DappendOutput=false"],
            repo, log, f"resolve {what}")
    coords = []
    for line in listing.read_text().splitlines():
        # group:artifact:type[:classifier]:version:scope:/abs/path[ -- module …]
        line = line.strip()
        if ":/" not in line:
            continue
        fields = line[:line.index(":/")].split(":")
        group, artifact, kind = fields[:3]
        classifier = fields[3] if len(fields) == 6 else None
        version = fields[-2]
        coords.append(":".join([group, artifact, version, kind, *([classifier] if classifier else [])]))
    if not coords:
        raise TrinoSetupError(f"resolving {what}: mvn listed no artifact; see {log} and {listing}")
    return coords


def pom_text(version: str, deps: list[str], provided: list[tuple[str, str]] = ()) -> str:
    """A throwaway POM: Trino's root POM as a BOM (every version Trino builds with), the
    given dependencies, and the artifacts the server provides to plugins as `provided`."""
    def dep(group, artifact, extra=""):
        return (f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
                f"{extra}</dependency>")
    lines = [dep(*d.split(":")[:2], f"<version>{version}</version>") for d in deps]
    lines += [dep(g, a, "<scope>provided</scope>") for g, a in provided]
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>floe.lab</groupId>
  <artifactId>trino-{version}-assembly</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencyManagement><dependencies>
    <dependency><groupId>io.trino</groupId><artifactId>trino-root</artifactId><version>{version}</version>
      <type>pom</type><scope>import</scope></dependency>
  </dependencies></dependencyManagement>
  <dependencies>
{chr(10).join(lines)}
  </dependencies>
</project>
"""


POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def provided_by(pom: Path) -> list[tuple[str, str]]:
    """(group, artifact) of every dependency `pom` marks `provided`."""
    root = ET.parse(pom).getroot()
    out = []
    for d in root.findall("m:dependencies/m:dependency", POM_NS):
        scope = d.findtext("m:scope", default="", namespaces=POM_NS)
        if scope == "provided":
            out.append((d.findtext("m:groupId", namespaces=POM_NS), d.findtext("m:artifactId", namespaces=POM_NS)))
    return out


def pom_property(pom: Path, name: str) -> str | None:
    root = ET.parse(pom).getroot()
    return root.findtext(f"m:properties/m:{name}", namespaces=POM_NS)


def parent_of(pom: Path) -> str | None:
    root = ET.parse(pom).getroot()
    p = root.find("m:parent", POM_NS)
    if p is None:
        return None
    return ":".join(p.findtext(f"m:{k}", namespaces=POM_NS) for k in ("groupId", "artifactId", "version"))


def resolve_roles(version: str, repo: Path, log: Path) -> list[tuple[str, str]]:
    """(role, coordinates) of every file the server `version` is made of, resolved by Maven."""
    if SERVERS[version][1] == "release":
        return [("server", f"io.trino:trino-server-core:{version}:tar.gz"),
                ("plugin-zip", f"io.trino:trino-iceberg:{version}:zip"),
                ("plugin", SQLITE_JDBC), ("password", RELEASE_TARBALL),
                ("delta", FULL_TARBALL)]
    root_pom = mvn_get(f"io.trino:trino-root:{version}:pom", repo, log)
    iceberg_pom = mvn_get(f"io.trino:trino-iceberg:{version}:pom", repo, log)
    work = Path(tempfile.mkdtemp(prefix="poms-"))
    try:
        (work / "lib").mkdir()
        (work / "lib" / "pom.xml").write_text(pom_text(version, ["io.trino:trino-main"]))
        (work / "iceberg").mkdir()
        (work / "iceberg" / "pom.xml").write_text(
            pom_text(version, ["io.trino:trino-iceberg"], provided_by(iceberg_pom)))
        lib = mvn_resolve(work / "lib" / "pom.xml", repo, log, f"trino-main {version} and its runtime dependencies")
        plugin = mvn_resolve(work / "iceberg" / "pom.xml", repo, log,
                             f"trino-iceberg {version} and its runtime dependencies")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # airlift's launcher: the version Trino's parent POM (airbase) names
    parent = parent_of(root_pom)
    if not parent or not parent.startswith("io.airlift:airbase:"):
        raise TrinoSetupError(f"{root_pom}: its parent is {parent!r}, not io.airlift:airbase")
    airbase = mvn_get(f"{parent}:pom", repo, log)
    lv = pom_property(airbase, "dep.launcher.version")
    if not lv:
        raise TrinoSetupError(f"{airbase}: no dep.launcher.version property")
    launcher = [f"io.airlift:launcher:{lv}:tar.gz:{part}" for part in ("bin", "properties")]
    return ([("lib", c) for c in lib] + [("plugin", c) for c in plugin] + [("plugin", SQLITE_JDBC)]
            + [("launcher", c) for c in launcher] + [("password", RELEASE_TARBALL)])


def write_lock(version: str, repo: Path, say=print) -> Path:
    """Resolve the server `version` with Maven into `repo` and pin what it is made of in
    `trino-<version>.lock`: each file's role, coordinates, published SHA-1 and size."""
    repo.mkdir(parents=True, exist_ok=True)
    log = repo.parent / f"mvn-lock-{version}.log"
    t = time.monotonic()
    roles = resolve_roles(version, repo, log)
    pins = []
    for role, coords in dict.fromkeys(roles):
        path = artifact_path(repo, coords)
        if not path.exists():  # not resolved as a dependency: fetched on its own
            path = mvn_get(coords, repo, log)
        pins.append(Pin(role, coords, published_sha1(path), path.stat().st_size))
    how = ("the release tarball and the Iceberg plugin's zip" if SERVERS[version][1] == "release" else
           f"a throwaway POM importing io.trino:trino-root:{version} as a BOM, `mvn dependency:list "
           f"-DincludeScope=runtime` of io.trino:trino-main (lib) and of io.trino:trino-iceberg without "
           f"what its POM marks provided (plugin), and airlift's launcher of airbase's dep.launcher.version")
    header = [
        f"# Trino {version} for the lab: every file its server is made of, fetched from Maven Central",
        "# and checked against the SHA-1 Maven Central publishes for it (tests/lab/trinodist.py).",
        f"# Written by `python3 tests/lab/trinodist.py lock {version}` (needs mvn): {how}.",
        "# role coordinates (group:artifact:version:type[:classifier]) sha1 size",
    ]
    text = "\n".join(header + sorted(p.line() for p in pins)) + "\n"
    lock_path(version).write_text(text)
    say(f"wrote {lock_path(version)}: {len(pins)} files, {sum(p.size for p in pins) / 2**20:.0f} MiB "
        f"(resolved in {time.monotonic() - t:.0f} s; Maven's log: {log})")
    return lock_path(version)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="trinodist", description="the lab's real Trino servers")
    sub = ap.add_subparsers(dest="cmd", required=True)
    lock = sub.add_parser("lock", help="resolve a server with Maven and pin its files in trino-<version>.lock")
    lock.add_argument("version", choices=list(SERVERS))
    lock.add_argument("--repo", type=Path, default=None,
                      help="the Maven repository to resolve into (default: a new one under /tmp, "
                           "so every file is fetched and checked again)")
    fetch = sub.add_parser("fetch", help="fetch and lay out a server from its lock (what `labctl up` does)")
    fetch.add_argument("version", choices=list(SERVERS))
    fetch.add_argument("--cache", type=Path, default=None, help="default: $FLOE_CACHE_DIR or ~/.cache/floe")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "lock":
            repo = args.repo or Path(tempfile.mkdtemp(prefix=f"trino-{args.version}-m2-"))
            write_lock(args.version, repo.resolve())
        else:
            cache = args.cache or Path(os.environ.get("FLOE_CACHE_DIR") or Path(
                os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "floe")
            jdk, _ = choose_jdk(args.version)
            t = time.monotonic()
            server, facts = ensure_server(cache.resolve(), args.version, jdk, print)
            print(f"{server}: {json.dumps(facts)} ({time.monotonic() - t:.1f} s)")
    except TrinoSetupError as e:
        print(f"trinodist: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
