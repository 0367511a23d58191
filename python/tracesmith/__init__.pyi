# Type stubs of the tracesmith package (docstrings: help(tracesmith.<name>)).
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union
import os

import numpy as np

__version__: str
SBT_VERSION: Tuple[int, int]

_Path = Union[str, "os.PathLike[str]"]

class TraceError(RuntimeError): ...

class Frame(NamedTuple):
    kind: str
    function: str
    file: str
    line: int
    pc: int

class Table:
    kind: str
    def __len__(self) -> int: ...
    @property
    def fields(self) -> List[str]: ...
    def __contains__(self, field: str) -> bool: ...
    def __getitem__(self, field: str) -> np.ndarray: ...
    def __getattr__(self, field: str) -> np.ndarray: ...
    def to_pandas(self): ...  # -> pandas.DataFrame

class Trace:
    path: str
    strings: np.ndarray
    version: Tuple[int, int]
    damage: List[Tuple[int, int, str]]
    complete: bool
    skipped_kinds: frozenset
    kernels: Table
    memcpys: Table
    memsets: Table
    syncs: Table
    api: Table
    nvtx: Table
    markers: Table
    memory: Table
    counters: Table
    modules: Table
    graphs: Table
    overheads: Table
    drops: Table
    devices: Table
    processes: Table
    threads: Table
    clocks: Table
    mappings: Table
    frames: Table
    stack_nodes: Table
    stat_rows: Table
    metadata_rows: Table
    def table(self, kind: str) -> Table: ...
    @property
    def kinds(self) -> List[str]: ...
    def to_pandas(self, kind: str = ...): ...
    @property
    def metadata(self) -> Dict[str, str]: ...
    @property
    def stats(self) -> Dict[str, int]: ...
    def stack(self, stack_id: int) -> List[Frame]: ...

def load(path: _Path, strict: bool = ..., kinds: Union[str, List[str], None] = ...) -> Trace: ...
def analyze(path: Union[_Path, Trace], start: str = ..., end: str = ..., steps: str = ...,
            whole: bool = ..., strict: bool = ...) -> dict: ...
def memory(path: Union[_Path, Trace], at: object = ..., top: int = ...,
           strict: bool = ...) -> dict: ...
def diff(a: Union[_Path, Trace], b: Union[_Path, Trace], nvtx: str = ...,
         strict: bool = ...) -> dict: ...
def export(path: Union[_Path, Trace], out: Optional[_Path] = ..., format: Optional[str] = ...,
           gzip: bool = ..., overwrite: bool = ..., strict: bool = ..., node_limit: int = ...,
           start: object = ..., end: object = ...) -> dict: ...
def export_perfetto(path: Union[_Path, Trace], out: Optional[_Path] = ...,
                    overwrite: bool = ...) -> dict: ...
def import_trace(path: _Path, out: Optional[_Path] = ..., xray_binary: str = ...,
                 overwrite: bool = ..., strict: bool = ...) -> dict: ...
def devices() -> dict: ...
def detect_platform() -> str: ...
def is_cuda_available() -> bool: ...
def get_cuda_device_count() -> int: ...

class Profiler:
    output: str
    step_num: int
    traces: List[str]
    last_trace: Optional[str]
    def __init__(self, output: _Path = ..., *, kinds: Union[str, List[str], None] = ...,
                 stacks: Optional[str] = ..., stack_depth: Optional[int] = ...,
                 buffer_mb: Optional[int] = ..., flush_ms: Optional[int] = ...,
                 overwrite: bool = ..., quiet: bool = ...,
                 replay_capture: Optional[str] = ..., replay_memory: Optional[str] = ...,
                 schedule: Optional[Callable[[int], str]] = ...,
                 on_trace_ready: Optional[Callable[["Profiler"], None]] = ...) -> None: ...
    def start(self) -> "Profiler": ...
    def step(self) -> None: ...
    def flush(self) -> None: ...
    def stop(self) -> Optional[str]: ...
    def __enter__(self) -> "Profiler": ...
    def __exit__(self, *exc: object) -> None: ...

def profile(output: _Path = ..., **options: object) -> Profiler: ...
def schedule(*, wait: int = ..., warmup: int = ..., active: int = ..., repeat: int = ...,
             skip_first: int = ...) -> Callable[[int], str]: ...
FORMATS: Tuple[str, ...]

class CommandResult(NamedTuple):
    exit_code: int
    signal: int
    seconds: float
    output: str
    files: List[str]
    kept_previous: bool

def profile_command(command: List[Union[str, "os.PathLike[str]"]], output: _Path = ..., *,
                    kinds: Union[str, List[str], None] = ..., stacks: Optional[str] = ...,
                    stack_depth: Optional[int] = ..., buffer_mb: Optional[int] = ...,
                    flush_ms: Optional[int] = ..., overwrite: bool = ..., quiet: bool = ...,
                    replay_capture: Optional[str] = ..., replay_memory: Optional[str] = ...,
                    symbolize: bool = ...) -> CommandResult: ...

def event_stats(path: _Path, kinds: Union[str, List[str], None] = ..., name: str = ...,
                stream: Optional[int] = ..., device: Optional[int] = ..., start: object = ...,
                end: object = ..., strict: bool = ...) -> Dict[str, Any]: ...

class SBTWriter:
    path: str
    def __init__(self, path: _Path, *, overwrite: bool = ...) -> None: ...
    def write_table(self, table: Table) -> None: ...
    def write_events(self, events: Union[Trace, Table, List[Table]]) -> None: ...
    def finalize(self) -> str: ...
    def close(self) -> str: ...
    def __enter__(self) -> "SBTWriter": ...
    def __exit__(self, *exc: object) -> None: ...

class SBTReader:
    path: str
    strict: bool
    def __init__(self, path: _Path, *, strict: bool = ...) -> None: ...
    def read(self, kinds: Union[str, List[str], None] = ...) -> Trace: ...
    def read_events(self, kinds: Union[str, List[str], None] = ...) -> Trace: ...
    def tables(self) -> Iterator[Tuple[str, Table]]: ...
    @property
    def version(self) -> Tuple[int, int]: ...
    def __enter__(self) -> "SBTReader": ...
    def __exit__(self, *exc: object) -> None: ...

class ReplayLaunch:
    index: int
    last_index: int
    kind: str
    kernel: str
    status: str
    bytes_compared: int
    bytes_differing: int
    first_diff_address: Optional[int]
    max_abs_error: Optional[float]
    max_rel_error: Optional[float]
    iterations: int
    deterministic: bool
    replays_differing: int
    time_source: Optional[str]
    time_median_ns: int
    time_min_ns: int
    time_max_ns: int
    program_ns: Optional[int]
    ranges: int
    ranges_mapped_away: int
    error: Optional[str]
    details: Dict[str, Any]

class ReplayResult(NamedTuple):
    status: str
    exit_code: int
    report: str
    launches: Tuple[ReplayLaunch, ...] = ...
    device: Optional[str] = ...

def replay(path: _Path, *, launch: Optional[int] = ..., range: Optional[Tuple[int, int]] = ...,
           iterations: int = ..., device: int = ..., same_addresses_only: bool = ...,
           dry_run: bool = ..., strict: bool = ...) -> ReplayResult: ...
