"""Who writes to the memory ref: the local git identity, and the authors of records.

:class:`People` is the part of :class:`~gitmem.store.Store` that reads the repository's
``user.name``/``user.email`` (with ``git config``, remembered across processes), finds who
last changed a record (``git log``), and keeps the writers ``tur sync`` has reported.
"""

from __future__ import annotations

import time
from contextlib import suppress
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.store.gitcli import IDENTITY_VARIABLES, identity_environment
from gitmem.store.repo import pg
from gitmem.vocabulary import SIGNATURE_NOT_VERIFIED, UNSIGNED

if TYPE_CHECKING:
    import pygit2

    from gitmem.store.lookups import Lookups
    from gitmem.store.repo import Repository

__all__ = ["People"]

_FALLBACK_NAME = "tur"
_FALLBACK_EMAIL = "tur@localhost"


class People:
    """The identity gitmem commits as, and the authors of the records on the memory ref."""

    def __init__(self, repository: Repository, lookups: Lookups) -> None:
        self._repository = repository
        self._lookups = lookups
        self._idents: dict[str, tuple[str, str]] | None = None
        self._signs = False

    def signature(self) -> pygit2.Signature:
        """The author of the commits gitmem writes (see :meth:`author_and_committer`)."""
        return self.author_and_committer()[0]

    def author_and_committer(self) -> tuple[pygit2.Signature, pygit2.Signature]:
        """The author and committer of the next commit gitmem writes, as git would choose them.

        Git's order (``git help commit``, "COMMIT INFORMATION"; ``git help var``):
        ``GIT_AUTHOR_NAME``/``GIT_AUTHOR_EMAIL`` (``GIT_COMMITTER_*`` for the committer),
        then ``author.name``/``author.email`` (``committer.*``), then ``user.name``/
        ``user.email``, then ``$EMAIL`` for the address; only then ``tur <tur@localhost>``
        (where git would guess ``user@host`` or refuse). Dates: ``GIT_AUTHOR_DATE`` /
        ``GIT_COMMITTER_DATE`` in any format git parses (git parses them: ``git var -l``),
        else now, in the local time zone.
        """
        idents = self._ident_parts()[0]
        dated = self._dates()
        now = time.time()
        local = (datetime.fromtimestamp(now).astimezone().utcoffset() or timedelta(0))
        offset = int(local.total_seconds() // 60)
        out = []
        for role in ("author", "committer"):
            name, email = idents[role]
            when = dated.get(role)
            seconds, minutes = when if when is not None else (int(now), offset)
            out.append(pg().Signature(name, email, seconds, minutes))
        return out[0], out[1]

    def identity(self) -> str:
        """See :meth:`gitmem.store.Store.identity`."""
        name, email = self._ident_parts()[0]["author"]
        return f"{name} <{email}>"

    def signs(self) -> bool:
        """Whether git would sign the commits gitmem writes: ``commit.gpgSign`` (``git help config``)."""
        return self._ident_parts()[1]

    def _ident_parts(self) -> tuple[dict[str, tuple[str, str]], bool]:
        if self._idents is None:
            # Remembered across processes while the config files and the identity variables
            # are unchanged, so that a warm read starts no git process (and loads no libgit2).
            variables = identity_environment()
            env = "\0".join(variables.get(v, "\x01") for v in IDENTITY_VARIABLES)
            key = "ident3:" + ":".join(str(_mtime_ns(p)) for p in self._config_files()) + ":" + env
            found_memo = self._lookups.memo().get(key)
            if isinstance(found_memo, str) and found_memo.count("\n") == 4:
                a_name, a_email, c_name, c_email, sign = found_memo.split("\n")
                self._idents = {"author": (a_name, a_email), "committer": (c_name, c_email)}
                self._signs = sign == "1"
                return self._idents, self._signs
            config = self._identity_config()
            self._idents = {role: _choose(role, config, variables) for role in ("author", "committer")}
            self._signs = config.get("commit.gpgsign", "false").lower() in ("", "true", "yes", "on", "1")
            self._lookups.memo().put(key, "\n".join([*self._idents["author"], *self._idents["committer"],
                                                     "1" if self._signs else "0"]))
        return self._idents, self._signs

    def _identity_config(self) -> dict[str, str]:
        """``user.*``, ``author.*``, ``committer.*`` names and emails, ``commit.gpgsign``: git's config."""
        found: dict[str, str] = {}
        import subprocess  # lazy: a warm read imports no process machinery

        try:
            proc = subprocess.run(
                ["git", "--git-dir", str(self._repository.git_dir), "config", "--get-regexp",
                 r"^((user|author|committer)\.(name|email)|commit\.gpgsign)$"],
                capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
            )
            for line in proc.stdout.splitlines():
                name_key, _, value = line.partition(" ")
                found[name_key.lower()] = value.strip()  # the last value wins, as in git
        except OSError:  # no git executable: libgit2 reads the same configuration (and nobody signs)
            config = self._repository.repo.config
            for role in ("user", "author", "committer"):
                for part in ("name", "email"):
                    if f"{role}.{part}" in config:
                        found[f"{role}.{part}"] = str(config[f"{role}.{part}"])
        return found

    def write_commit(self, tree: str, parents: list[str], message: str) -> str:
        """Write a commit of ``tree`` on ``parents`` as :meth:`author_and_committer`; its sha.

        Where git's configuration says ``commit.gpgSign``, git writes it (``git commit-tree
        -S``), so that git's own signing program signs it as ``git commit`` would
        (``gpg.format``, ``gpg.program`` / ``gpg.ssh.program``, ``user.signingKey``); else
        libgit2 writes it (no process).

        Raises:
            GitmemError: signing failed (git's first line of error); nothing was written.
        """
        author, committer = self.author_and_committer()
        if not self.signs():
            return str(self._repository.repo.create_commit(None, author, committer, message, tree, parents))
        from gitmem.errors import GitmemError
        from gitmem.store.gitcli import Git, environment_with, first_line

        # The identities chosen above, exactly: git is told them rather than choosing again.
        chosen: dict[str, str] = {}
        for role, who in (("AUTHOR", author), ("COMMITTER", committer)):
            sign, minutes = ("-" if who.offset < 0 else "+"), abs(who.offset)
            chosen.update({f"GIT_{role}_NAME": who.name, f"GIT_{role}_EMAIL": who.email,
                           f"GIT_{role}_DATE": f"{who.time} {sign}{minutes // 60:02d}{minutes % 60:02d}"})
        env = environment_with(chosen)
        args = ["commit-tree", "-S", tree]
        for parent in parents:
            args += ["-p", parent]
        proc = Git(self._repository.git_dir, None).run(*args, data=message.encode("utf-8"), env=env)
        if proc.returncode != 0:
            raise GitmemError(f"git could not sign the commit (commit.gpgSign is set): "
                              f"{first_line(proc.stderr)}",
                              "fix the signing set-up (`git commit-tree -S` must work), "
                              "or unset commit.gpgSign")
        return proc.stdout.decode().strip()

    def _dates(self) -> dict[str, tuple[int, int]]:
        """``role -> (seconds, offset minutes)`` for the roles whose date variable is set.

        git parses the value (``git var -l`` prints the identities it would use, dates
        included), so every format git accepts is accepted here; a value git cannot parse
        makes git refuse, and so gitmem refuses the write.
        """
        variables = identity_environment()
        wanted = {role: variables.get(f"GIT_{role.upper()}_DATE") for role in ("author", "committer")}
        if not any(wanted.values()):
            return {}
        import subprocess  # lazy: a warm read imports no process machinery

        proc = subprocess.run(["git", "--git-dir", str(self._repository.git_dir), "var", "-l"],
                              capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
        out: dict[str, tuple[int, int]] = {}
        for line in proc.stdout.splitlines():
            for role in ("author", "committer"):
                prefix = f"GIT_{role.upper()}_IDENT="
                if wanted[role] and line.startswith(prefix):
                    parsed = _ident_date(line[len(prefix):])
                    if parsed is not None:
                        out[role] = parsed
        missing = [f"GIT_{role.upper()}_DATE" for role, value in wanted.items() if value and role not in out]
        if missing:
            from gitmem.errors import InvalidInput

            bad = missing[0]
            raise InvalidInput(f"{bad}={variables.get(bad)!r} is not a date git can read",
                               "use a format of `git help commit` (DATE FORMATS), or unset it")
        return out

    def _config_files(self) -> list[Path]:
        """The git configuration files an identity can come from (repository, global, XDG)."""
        home = Path.home()
        where = self._repository
        files = [where.common_dir / "config", where.git_dir / "config", home / ".gitconfig",
                 home / ".config" / "git" / "config"]
        if identity_environment().get("GIT_CONFIG_GLOBAL"):
            files.append(Path(identity_environment()["GIT_CONFIG_GLOBAL"]))
        return files

    def last_authors(self, tip: str, paths: set[str]) -> dict[str, str]:
        """See :meth:`gitmem.store.Store.last_authors`."""
        return {path: found[0] for path, found in self.attribution(tip, paths).items() if found}

    def attribution(self, tip: str, paths: set[str], since: str | None = None, *,
                    descends: bool = False, require_signatures: bool = False) -> dict[str, tuple[str, ...]]:
        """See :meth:`gitmem.store.Store.attribution`."""
        if not paths:
            return {}
        signed = "s" if require_signatures else ""
        if since is not None and not descends and not self._descends(tip, since):
            since = None
        small = since is None and len(paths) <= 4
        if small:
            # Of one tip, never different: remembered across processes (persona, notes).
            memo = self._lookups.memo()
            remembered = {p: memo.get(f"attribution2{signed}:{tip}:{p}") for p in paths}
            if all(isinstance(v, str) for v in remembered.values()):
                return {p: tuple(v.split("\n")) for p, v in remembered.items() if v}
        found, merged = self._walk(tip, paths, since, require_signatures=require_signatures)
        by_merge: dict[tuple[str, str], set[str]] = {}
        for path, (sha, parents) in merged.items():
            by_merge.setdefault((sha, parents), set()).add(path)
        for (sha, parents), made in by_merge.items():
            # A merge made the version: whoever changed the path on any side since the sides'
            # common base had a hand in it (all of its history when the sides share none).
            base = self._merge_base(parents.split())
            again, _ = self._walk(sha, made, base, everyone=True, require_signatures=require_signatures)
            for path in made:
                first = found.get(path, ())[:1]
                found[path] = tuple(dict.fromkeys([*first, *again.get(path, ())]))
        if small:
            self._lookups.memo().put_many({f"attribution2{signed}:{tip}:{p}": "\n".join(found.get(p, ()))
                                           for p in paths})
        return found

    def _descends(self, tip: str, since: str) -> bool:
        if tip == since:
            return True
        import subprocess  # lazy: a warm read imports no process machinery

        # git, not libgit2: a wake after a learn loads no libgit2 (and git reads the commit-graph).
        try:
            return subprocess.run(
                ["git", "--git-dir", str(self._repository.git_dir), "merge-base", "--is-ancestor",
                 since, tip],
                capture_output=True, check=False, stdin=subprocess.DEVNULL).returncode == 0
        except OSError:
            return False

    def _merge_base(self, parents: list[str]) -> str | None:
        """The best common ancestor of ``parents`` (``git merge-base --octopus``), or ``None``."""
        import subprocess  # lazy: a warm read imports no process machinery

        try:
            proc = subprocess.run(["git", "--git-dir", str(self._repository.git_dir), "merge-base",
                                   "--octopus", *parents], capture_output=True, text=True, check=False,
                                  stdin=subprocess.DEVNULL)
        except OSError:
            return None
        found = proc.stdout.strip()
        return found if proc.returncode == 0 and found else None

    def _walk(self, tip: str, paths: set[str], since: str | None, *, everyone: bool = False,
              require_signatures: bool = False,
              ) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, str]]]:
        """One ``git log --cc --name-only`` over ``paths``: the newest author of each, and those a merge made.

        The second map holds, for each path whose newest change is a merge, that merge's sha
        and parents. With ``everyone``, every author of every change of each path in the
        range, newest first. Each author carries git's verdict on its commit's signature
        (``%G?``, which git computes with ``gpg.program`` / ``gpg.ssh.allowedSignersFile``
        as ``git verify-commit`` does, in the same process): see :func:`_signed_author`.
        """
        import subprocess  # lazy: a warm read imports no process machinery

        specs = sorted({p.split("/", 1)[0] + "/" if "/" in p else p for p in paths})
        if len(paths) <= 16:
            specs = sorted(paths)
        revision = f"{since}..{tip}" if since is not None else tip
        found: dict[str, list[str]] = {}
        merged: dict[str, tuple[str, str]] = {}
        try:
            proc = subprocess.Popen(
                ["git", "--git-dir", str(self._repository.git_dir), "-c", "core.quotePath=false", "log",
                 "--no-renames", "--cc", "--name-only", "--format=%x00%H%x00%P%x00%G?%x00%GS%x00%an <%ae>",
                 revision, "--", *specs],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                text=True, errors="replace",
            )
        except OSError:  # no git executable: nobody is known to have made anything (untrusted)
            return {}, {}
        assert proc.stdout is not None
        done = 0
        sha, parents, author, merge = "", "", "", False
        try:
            for line in proc.stdout:
                line = line.rstrip("\n")
                if line.startswith("\0"):
                    sha, parents, verdict, signer, author = line[1:].split("\0", 4)
                    author = _signed_author(author, verdict, signer, require_signatures)
                    merge = " " in parents.strip()
                    continue
                if not line or line not in paths:
                    continue
                if everyone:
                    seen = found.setdefault(line, [])
                    if author not in seen:
                        seen.append(author)
                    continue
                if line in found:
                    continue
                found[line] = [author]
                if merge:
                    merged[line] = (sha, parents)
                done += 1
                if done == len(paths):
                    break
        finally:
            proc.kill()
            proc.communicate()
        # One tuple per distinct author list: the read cache stores (and marshal writes) each once.
        one: dict[tuple[str, ...], tuple[str, ...]] = {}
        return {p: one.setdefault(tuple(a), tuple(a)) for p, a in found.items()}, merged

    @property
    def _accepted_file(self) -> Path:
        return self._repository.common_dir / "tur" / "accepted"

    def accepted(self) -> set[str]:
        """See :meth:`gitmem.store.Store.accepted`."""
        try:
            return {line.strip() for line in self._accepted_file.read_text().splitlines() if line.strip()}
        except (OSError, UnicodeDecodeError):
            return set()

    def accept(self, blob_id: str) -> None:
        """See :meth:`gitmem.store.Store.accept`."""
        path = self._accepted_file
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(blob_id + "\n")

    @property
    def _authors_file(self) -> Path:
        return self._repository.common_dir / "tur" / "authors"

    def known_authors(self) -> list[str]:
        """Writers ``tur sync`` has reported as new (``<common dir>/tur/authors``, one a line)."""
        try:
            return [line for line in self._authors_file.read_text().splitlines() if line]
        except (OSError, UnicodeDecodeError):
            return []

    def add_known_authors(self, authors: list[str]) -> None:
        """Remember ``authors`` as seen (see :meth:`known_authors`); best effort."""
        path = self._authors_file
        with suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                handle.writelines(a.replace("\n", " ") + "\n" for a in authors)


def _signed_author(author: str, verdict: str, signer: str, require_signatures: bool) -> str:
    """``author`` (``Name <email>``) with git's verdict on its commit's signature, when it weakens it.

    ``verdict`` is ``git log``'s ``%G?`` (``git help log``, "PRETTY FORMATS"): ``G`` good,
    ``N`` none; ``B`` bad, ``U`` good but of unknown validity (with ssh: a key that
    ``gpg.ssh.allowedSignersFile`` does not list, or no such file), ``X``/``Y`` expired
    signature/key, ``R`` revoked key, ``E`` not checkable (missing key). ``signer`` is
    ``%GS``: the principal of ``allowedSignersFile`` (ssh) or the key's user id
    (``Name <email>``, gpg). git checks the key, not that it is the author's: a good
    signature counts only when the signer is the author's email (ssh) or names it in
    ``<...>`` (gpg), so that Mallory's valid key on a commit that says Alice does not
    vouch for Alice. A verified signature, and no signature unless ``require_signatures``,
    leave the author as git names it; anything else appends
    :data:`~gitmem.vocabulary.SIGNATURE_NOT_VERIFIED` (:data:`~gitmem.vocabulary.UNSIGNED`
    for no signature where one is required): shown so, and never trusted.
    """
    if verdict == "N":
        return author + UNSIGNED if require_signatures else author
    email = author.rpartition("<")[2].rstrip(">").strip().lower()
    signer = signer.strip().lower()
    if verdict == "G" and email and (signer == email or f"<{email}>" in signer):
        return author
    return author + SIGNATURE_NOT_VERIFIED


def _mtime_ns(path: Path) -> int:
    """Modification time of ``path`` in nanoseconds, or 0 when it does not exist."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _choose(role: str, config: dict[str, str], variables: dict[str, str]) -> tuple[str, str]:
    """``(name, email)`` of ``role`` (author or committer) in git's order (see ``author_and_committer``)."""
    prefix = f"GIT_{role.upper()}_"
    # git refuses a commit whose name is set but empty; here an empty value falls through to
    # the next source instead of failing the write.
    name = (variables.get(prefix + "NAME") or config.get(f"{role}.name") or config.get("user.name")
            or _FALLBACK_NAME)
    email = (variables.get(prefix + "EMAIL") or config.get(f"{role}.email") or config.get("user.email")
             or variables.get("EMAIL") or _FALLBACK_EMAIL)
    return name, email


def _ident_date(ident: str) -> tuple[int, int] | None:
    """``(seconds, offset minutes)`` of a ``Name <email> 1700000000 +0200`` identity line."""
    _, _, when = ident.rpartition("> ")
    seconds, _, zone = when.strip().partition(" ")
    if not seconds.isdigit() or len(zone) != 5 or zone[0] not in "+-" or not zone[1:].isdigit():
        return None
    minutes = int(zone[1:3]) * 60 + int(zone[3:])
    return int(seconds), -minutes if zone[0] == "-" else minutes
