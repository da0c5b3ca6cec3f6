"""A model's ``config.json`` from the Hugging Face Hub, by its id (``Qwen/Qwen3-8B``).

Only ``config.json`` is fetched, never weights, through ``huggingface_hub`` (the optional extra
``hub``), so its cache, ``HF_HUB_OFFLINE`` and tokens (``HF_TOKEN``, the login token) apply as
for transformers. Every way the fetch fails is one line naming the repository and what to do.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from flopsreg.errors import ModelError

__all__ = ["config_source", "fetch_config", "is_hub_id"]

# owner/name as the Hub spells repository ids (huggingface_hub's validate_repo_id): letters, digits,
# '-', '_', '.'; a file suffix of a model description (.json, .toml) marks a path instead
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_PATH_SUFFIXES = (".json", ".toml")


def is_hub_id(spec: str) -> bool:
    """Whether *spec* reads as a Hub repository id (one ``/`` between an owner and a name, no
    ``--`` or ``..``, not a ``.json``/``.toml`` file name); whether a local path wins is the caller's."""
    return (
        bool(_HUB_ID.fullmatch(spec))
        and "--" not in spec
        and ".." not in spec
        and not spec.endswith(".git")
        and Path(spec).suffix not in _PATH_SUFFIXES
    )


def _where(repo_id: str, revision: str | None) -> str:
    return f"Hub id {repo_id!r}" + (f" at revision {revision!r}" if revision is not None else "")


def fetch_config(repo_id: str, revision: str | None = None) -> Path:
    """The local path of *repo_id*'s ``config.json`` at *revision* (default: the main branch),
    from the Hugging Face cache or downloaded into it."""
    where = _where(repo_id, revision)
    try:
        from huggingface_hub import constants, errors, hf_hub_download
    except ImportError:
        raise ModelError(
            f"{where}: reading a model from the Hugging Face Hub needs huggingface_hub: pip install 'flopsreg[hub]' "
            "(or give a local config.json)"
        ) from None
    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    hub_log.setLevel(logging.ERROR)  # its retry warnings would print beside the one line flopsreg gives
    try:
        return Path(hf_hub_download(repo_id, "config.json", revision=revision))
    except errors.GatedRepoError:
        raise ModelError(
            f"{where}: a gated repository you have no access to: ask for it at https://huggingface.co/{repo_id}, "
            "then log in (hf auth login) or set HF_TOKEN"
        ) from None
    except errors.RepositoryNotFoundError:
        raise ModelError(
            f"{where}: no such model repository on the Hub (nor a local path of that name), or a private one: check the id, "
            "or log in (hf auth login) or set HF_TOKEN"
        ) from None
    except errors.RevisionNotFoundError:
        raise ModelError(
            f"{where}: not a branch, tag or commit of {repo_id}"
        ) from None
    except errors.LocalEntryNotFoundError:
        why = (
            "HF_HUB_OFFLINE is set"
            if constants.HF_HUB_OFFLINE
            else "the Hub cannot be reached"
        )
        raise ModelError(
            f"{where}: config.json is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) "
            f"and {why}: fetch it once online, or give a local config.json"
        ) from None
    except errors.EntryNotFoundError:
        raise ModelError(
            f"{where}: the repository has no config.json (flopsreg reads a transformers model's config.json)"
        ) from None
    except errors.HFValidationError as exc:
        raise ModelError(f"{where}: not a valid Hub repository id: {_first_line(exc)}") from None
    except (errors.HfHubHTTPError, OSError) as exc:
        raise ModelError(f"{where}: cannot fetch config.json: {_first_line(exc)}") from None
    finally:
        hub_log.setLevel(level)


def _first_line(error: Exception) -> str:
    """The first line of *error*'s message: huggingface_hub's run over several."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def config_source(spec: str, revision: str | None = None) -> tuple[Path, str | None]:
    """(the ``config.json`` *spec* names, the Hub id it came from or None): a local file or folder
    wins over a Hub id of the same spelling; *revision* is for Hub ids only."""
    path = Path(spec)
    if path.exists():
        if revision is not None:
            raise ModelError(f"revision = {revision!r}: applies to a Hub id only; {spec!r} is a local path")
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise ModelError(f"{spec!r}: a folder without a config.json")
            return path / "config.json", None
        return path, None
    if is_hub_id(spec):
        return fetch_config(spec, revision), spec
    raise ModelError(
        f"{spec!r}: no such file or folder, nor a Hugging Face Hub id (owner/name, e.g. 'Qwen/Qwen3-8B')"
    )
