"""Where each real Trino of the lab comes from (standard library only; used by realtrino).

Two servers, both from Maven Central through `mvn` (the only registry that publishes
them), into `$FLOE_CACHE_DIR/trino/m2` (a Maven repository of its own, so the checksum files
Maven fetched beside each artifact are at a known place), every file checked against the
SHA-1 Maven Central publishes for it, and laid out once under
`$FLOE_CACHE_DIR/trino/<version>/server-<recipe>` (the recipe's hash in the name: a change
of recipe builds beside an older layout, never over it):

- **476**, the last release whose server tarball Maven Central serves:
  `io.trino:trino-server-core:476:tar.gz` with `io.trino:trino-iceberg:476:zip` unpacked into
  `plugin/iceberg`; every plugin but the Iceberg connector and the password authenticators
  removed.
- **483**, the newest release, whose tarball is not served: assembled from its jars as the
  release lays them out. A throwaway POM imports `io.trino:trino-root:483` as a BOM; `lib/`
  is `io.trino:trino-main` with its runtime dependencies; `plugin/iceberg` is
  `io.trino:trino-iceberg` with its runtime dependencies minus what its own POM marks
  `provided` (the server provides those to plugins), plus the services file the release adds
  in a jar of its own; `bin/` is airlift's launcher (the version Trino's parent POM names)
  pointed at a main class of a few lines that starts `io.trino.server.Server` with the
  version, compiled here with the JDK that runs it.

Trino's password authenticators plugin was never published to Maven Central (the release
bundles it): both servers load it from the 476 release tarball (its SPI, a
`PasswordAuthenticatorFactory` named `file`, is unchanged since).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.50.3.0:jar"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
# The 476 release tarball: the server of 476 and the source of the password plugin for both.
RELEASE_TARBALL = "io.trino:trino-server-core:476:tar.gz"
PASSWORD_PLUGIN = "password-authenticators"
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


# ---------------------------------------------------------------------------- Maven
def mvn_bin() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise TrinoSetupError("`mvn` is not on PATH: it fetches the Trino servers from Maven Central "
                              "(Debian: apt-get install maven)")
    return mvn


def run_mvn(args: list[str], repo: Path, log: Path, what: str, cwd: Path | None = None) -> None:
    """`mvn` in batch mode on the repository `repo`, failing on a checksum mismatch (`-C`)."""
    with open(log, "ab") as out:
        out.write(f"\n# {time.strftime('%Y-%m-%d %H:%M:%S')} {what}\n".encode())
        out.flush()
        proc = subprocess.run(
            [mvn_bin(), "-B", "-C", "--no-transfer-progress", f"-Dmaven.repo.local={repo}",
             # a cold resolution is mostly many small downloads: more of them at once
             "-Daether.connector.basic.threads=8", *args],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=3600,
            cwd=str(cwd) if cwd else None)
    if proc.returncode != 0:
        raise TrinoSetupError(f"mvn could not {what} (exit {proc.returncode}); see {log}:\n"
                              + log.read_text(errors="replace")[-2000:])


def verify_sha1(path: Path) -> None:
    """`path` against the `.sha1` Maven fetched beside it from Maven Central; a mismatch is
    moved aside (the next start fetches it again)."""
    sha1 = path.with_name(path.name + ".sha1")
    if not sha1.exists():
        raise TrinoSetupError(f"{path}: Maven fetched no checksum beside it ({sha1.name})")
    want = sha1.read_text().split()[0].strip().lower() if sha1.read_text().strip() else ""
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != want:
        bad = path.with_name(path.name + ".corrupt")
        path.replace(bad)
        raise TrinoSetupError(f"{path}: SHA-1 {h.hexdigest()} is not the published {want!r}; moved it to "
                              f"{bad.name}, the next start fetches it again")


def artifact_path(repo: Path, coords: str) -> Path:
    """Where `group:artifact:version:type[:classifier]` lies in the Maven repository `repo`."""
    parts = coords.split(":")
    group, artifact, version, kind = parts[:4]
    classifier = f"-{parts[4]}" if len(parts) > 4 else ""
    return repo / Path(*group.split(".")) / artifact / version / f"{artifact}-{version}{classifier}.{kind}"


@contextlib.contextmanager
def locked(path: Path):
    """An exclusive lock on `path` (created), held while the block runs: two labs (or two
    servers of one lab) never fetch one file, or build one server, at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def mvn_fetch(coords: str, repo: Path, log: Path) -> Path:
    """The artifact `group:artifact:version:type[:classifier]` in the Maven repository `repo`,
    fetched there by `mvn` when missing, and checked against the `.sha1` fetched with it."""
    path = artifact_path(repo, coords)
    with locked(repo / ".floe-fetch.lock"):
        return _mvn_fetch(coords, path, repo, log)


def _mvn_fetch(coords: str, path: Path, repo: Path, log: Path) -> Path:
    sha1 = path.with_name(path.name + ".sha1")
    if not (path.exists() and sha1.exists()):
        run_mvn([f"{DEPENDENCY_PLUGIN}:get", "-Dtransitive=false", f"-Dartifact={coords}"], repo, log,
                f"fetch {coords}")
        if not path.exists():
            raise TrinoSetupError(f"mvn fetched {coords} but {path} is not there; see {log}")
    verify_sha1(path)
    return path


def resolve(pom: Path, repo: Path, log: Path, what: str) -> list[Path]:
    """Every runtime artifact of the throwaway POM `pom` (its dependencies, transitively),
    resolved into `repo`, each checked against its published SHA-1: their paths in `repo`."""
    listing = pom.with_name("resolved.txt")
    run_mvn(["-f", str(pom), f"{DEPENDENCY_PLUGIN}:list", "-DincludeScope=runtime",
             "-DoutputAbsoluteArtifactFilename=true", f"-DoutputFile={listing}", "-DappendOutput=false"],
            repo, log, f"resolve {what}")
    paths = []
    for line in listing.read_text().splitlines():
        # group:artifact:type[:classifier]:version:scope:/abs/path[ -- module …]
        line = line.strip()
        if ":/" not in line:
            continue
        path = Path(line[line.index(":/") + 1:].split(" -- ")[0].strip())
        if not path.exists():
            raise TrinoSetupError(f"resolving {what}: {path} is listed but missing; see {log}")
        verify_sha1(path)
        paths.append(path)
    if not paths:
        raise TrinoSetupError(f"resolving {what}: mvn listed no artifact; see {log} and {listing}")
    return paths


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


# ---------------------------------------------------------------------------- layouts
def recipe_key(version: str) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([RECIPE_FORMAT, version, SERVERS[version], KEEP_PLUGINS, SQLITE_JDBC,
                         RELEASE_TARBALL, MAIN_SOURCE]).encode())
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
    base = cache / "trino"
    repo = base / "m2"
    log = base / f"mvn-{version}.log"
    base.mkdir(parents=True, exist_ok=True)
    tmp = server.parent / f".{server.name}.building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    before = repo_bytes(repo)
    t = time.monotonic()
    try:
        if SERVERS[version][1] == "release":
            say(f"real trino {version}: fetching the release tarball and the Iceberg plugin through Maven (once)")
            build_release(version, tmp, repo, log)
        else:
            say(f"real trino {version}: assembling the server from its Maven artifacts (once)")
            build_assembled(version, tmp, repo, log, jdk)
        sqlite = mvn_fetch(SQLITE_JDBC, repo, log)
        shutil.copy2(sqlite, tmp / "plugin" / "iceberg" / sqlite.name)
        add_password_plugin(tmp, repo, log)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    facts = {"downloaded_bytes": repo_bytes(repo) - before, "build_s": round(time.monotonic() - t, 1),
             "version": version, "recipe": recipe_key(version)}
    (tmp / ".floe-complete").write_text(json.dumps(facts))
    if server.exists():
        shutil.rmtree(server)
    tmp.rename(server)
    return server, {**facts, "cached": False}


def repo_bytes(repo: Path) -> int:
    total = 0
    if repo.exists():
        for dirpath, _, files in os.walk(repo):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(dirpath, f))
                except OSError:
                    pass
    return total


def build_release(version: str, out: Path, repo: Path, log: Path) -> None:
    """A release server: its tarball unpacked (GNU tar: it is full of hard links), the
    Iceberg plugin's zip into `plugin/iceberg`, every other plugin but the password one removed."""
    tarball = mvn_fetch(f"io.trino:trino-server-core:{version}:tar.gz", repo, log)
    plugin = mvn_fetch(f"io.trino:trino-iceberg:{version}:zip", repo, log)
    subprocess.run(["tar", "-xzf", str(tarball), "-C", str(out), "--strip-components=1"], check=True)
    with zipfile.ZipFile(plugin) as z:
        z.extractall(out / ".iceberg-zip")
    (top,) = list((out / ".iceberg-zip").iterdir())
    top.rename(out / "plugin" / "iceberg")
    shutil.rmtree(out / ".iceberg-zip")
    for p in (out / "plugin").iterdir():
        if p.name not in KEEP_PLUGINS:
            shutil.rmtree(p)


def build_assembled(version: str, out: Path, repo: Path, log: Path, jdk: Path) -> None:
    """A server laid out as the release does, from its jars (see the module's docstring)."""
    root_pom = mvn_fetch(f"io.trino:trino-root:{version}:pom", repo, log)
    iceberg_pom = mvn_fetch(f"io.trino:trino-iceberg:{version}:pom", repo, log)
    work = Path(tempfile.mkdtemp(prefix="poms-", dir=out.parent))
    try:
        (work / "lib").mkdir()
        (work / "lib" / "pom.xml").write_text(pom_text(version, ["io.trino:trino-main"]))
        (work / "iceberg").mkdir()
        (work / "iceberg" / "pom.xml").write_text(
            pom_text(version, ["io.trino:trino-iceberg"], provided_by(iceberg_pom)))
        lib = resolve(work / "lib" / "pom.xml", repo, log, f"trino-main {version} and its runtime dependencies")
        plugin = resolve(work / "iceberg" / "pom.xml", repo, log,
                         f"trino-iceberg {version} and its runtime dependencies")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    copy_jars(lib, out / "lib")
    copy_jars(plugin, out / "plugin" / "iceberg")
    services_jar(out / "plugin" / "iceberg" / f"trino-iceberg-{version}-services.jar", PLUGIN_CLASSES["iceberg"])
    launcher(version, root_pom, out, repo, log)
    main_jar(version, out, jdk)


def copy_jars(paths: list[Path], into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    for p in paths:
        target = into / p.name
        if target.exists():
            raise TrinoSetupError(f"two artifacts named {p.name} for {into}: {p} and the one copied before")
        shutil.copy2(p, target)


def services_jar(path: Path, plugin_class: str) -> None:
    """The jar the release adds to a plugin's directory: the plugin's ServiceLoader entry."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n\n")
        z.writestr("META-INF/services/io.trino.spi.Plugin", plugin_class + "\n")


def launcher(version: str, root_pom: Path, out: Path, repo: Path, log: Path) -> None:
    """airlift's launcher, the version Trino's parent POM (airbase) names, started on the
    assembled server's main class."""
    parent = parent_of(root_pom)
    if not parent or not parent.startswith("io.airlift:airbase:"):
        raise TrinoSetupError(f"{root_pom}: its parent is {parent!r}, not io.airlift:airbase")
    airbase = mvn_fetch(f"{parent}:pom", repo, log)
    lv = pom_property(airbase, "dep.launcher.version")
    if not lv:
        raise TrinoSetupError(f"{airbase}: no dep.launcher.version property")
    # `bin`: the launcher's binaries; `properties`: its wrapper script and properties file
    for part in ("bin", "properties"):
        tarball = mvn_fetch(f"io.airlift:launcher:{lv}:tar.gz:{part}", repo, log)
        subprocess.run(["tar", "-xzf", str(tarball), "-C", str(out)], check=True)
    (out / "bin" / "launcher.properties").write_text(
        f"main-class={MAIN_CLASS}\nprocess-name=trino-server\n")


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
        proc = subprocess.run([str(jdk / "bin" / "jar"), "--create", "--file",
                               str(out / "lib" / f"floe-lab-trino-main-{version}.jar"),
                               "--manifest", str(work / "MANIFEST.MF"), "-C", str(classes), "."],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise TrinoSetupError(f"jar of the assembled server's main class failed: {proc.stderr[-2000:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def add_password_plugin(out: Path, repo: Path, log: Path) -> None:
    """The password file authenticator, from the 476 release tarball (see the docstring)."""
    target = out / "plugin" / PASSWORD_PLUGIN
    if target.exists():
        return
    tarball = mvn_fetch(RELEASE_TARBALL, repo, log)
    # the tarball's plugin files are hard links to the server's own: unpack it whole
    work = Path(tempfile.mkdtemp(prefix="release-", dir=out.parent))
    try:
        subprocess.run(["tar", "-xzf", str(tarball), "-C", str(work), "--strip-components=1"], check=True)
        source = work / "plugin" / PASSWORD_PLUGIN
        if not source.is_dir():
            raise TrinoSetupError(f"{tarball}: no plugin/{PASSWORD_PLUGIN} in it")
        shutil.move(str(source), str(target))
    finally:
        shutil.rmtree(work, ignore_errors=True)
