"""@stage: what a declaration reads from its function, and what it refuses."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from pg_pipeline import Context, InvalidPayload, PermanentError, Registry, RetryableError, stage


class Resize(BaseModel):
    image_key: str
    width: int


class Out(BaseModel):
    ok: bool


def test_stage_reads_its_models_from_the_annotations() -> None:
    registry = Registry()

    @stage("resize", registry=registry, max_attempts=2, lease=60)
    def resize(job: Resize, ctx: Context) -> Out:
        return Out(ok=True)

    spec = registry.get("resize")
    assert (spec.input_model, spec.output_model, spec.max_attempts) == (Resize, Out, 2)
    assert spec.heartbeat_s == 12  # a fifth of the lease
    with pytest.raises(InvalidPayload, match="width"):
        spec.validate({"image_key": "a.png"})


def test_stage_rejects_bad_definitions() -> None:
    registry = Registry()
    with pytest.raises(TypeError, match="pydantic model"):
        stage("x", registry=registry)(lambda job, ctx: None)
    with pytest.raises(ValueError, match="shorter than"):

        @stage("y", registry=registry, lease=10, heartbeat=10)
        def y(job: Resize, ctx: Context) -> None: ...


@pytest.mark.parametrize("priority", [40_000, -40_000, True, 1.5])
def test_a_stage_priority_is_refused_where_a_job_priority_would_be(priority: object) -> None:
    with pytest.raises(ValueError, match=r"^stage 'p': priority must be"):

        @stage("p", registry=Registry(), priority=priority)  # type: ignore[arg-type]
        def p(job: Resize, ctx: Context) -> None: ...


def test_error_classification() -> None:
    registry = Registry()

    @stage("only_timeouts_retry", registry=registry, retry_on=(TimeoutError,))
    def a(job: Resize, ctx: Context) -> None: ...

    @stage("value_errors_are_final", registry=registry, permanent=(ValueError,))
    def b(job: Resize, ctx: Context) -> None: ...

    strict, lenient = registry.get("only_timeouts_retry"), registry.get("value_errors_are_final")
    assert not strict.is_permanent(TimeoutError()) and strict.is_permanent(KeyError())
    assert strict.is_permanent(PermanentError()) and not strict.is_permanent(RetryableError())
    assert lenient.is_permanent(ValueError()) and not lenient.is_permanent(KeyError())


def test_a_misspelt_stage_option_is_an_error_not_a_silent_default() -> None:
    with pytest.raises(TypeError, match="max_attempt"):
        stage("typo", max_attempt=3, registry=Registry())  # type: ignore[call-arg]


def test_a_stage_version_follows_its_input_model_and_nothing_else() -> None:
    class ResizeWithHeight(BaseModel):
        image_key: str
        width: int
        height: int

    versions = []
    for model, output, lease in (
        (Resize, Out, 60),
        (Resize, None, 90),
        (ResizeWithHeight, Out, 60),
    ):
        registry = Registry()

        def resize(job: BaseModel, ctx: Context) -> BaseModel | None:
            return None

        resize.__annotations__ = {"job": model, "ctx": Context, "return": output}
        stage("resize", registry=registry, lease=lease)(resize)
        versions.append(registry.get("resize").version)
    same_model, other_settings, new_field = versions
    assert same_model == other_settings != new_field


class Scan(BaseModel):
    path: str


class Text(BaseModel):
    text: str


class Words(BaseModel):
    words: list[str]


def test_then_naming_a_stage_whose_input_refuses_the_output_is_refused_at_registration() -> None:
    # The producer first: refused when the consumer it names is registered.
    reg = Registry()

    @stage("ocr", then="count", registry=reg)
    def ocr(job: Scan, ctx: Context) -> Text:
        return Text(text="")

    with pytest.raises(ValueError) as raised:

        @stage("count", registry=reg)
        def count(job: Words, ctx: Context) -> None:
            return None

    assert str(raised.value) == (
        "stage 'ocr' has then='count', whose input model Words does not take its output model "
        "Text: field 'words': required, and the output has no such field"
    )
    assert reg.names() == ["ocr"]

    # The consumer first: refused when the producer naming it is registered.
    reg = Registry()

    @stage("count", registry=reg)
    def count_first(job: Words, ctx: Context) -> None:
        return None

    with pytest.raises(ValueError, match="does not take its output model Text"):

        @stage("ocr", then="count", registry=reg)
        def ocr_then(job: Scan, ctx: Context) -> Text:
            return Text(text="")

    assert reg.names() == ["count"]


def test_then_naming_a_stage_that_takes_the_output_registers() -> None:
    reg = Registry()

    @stage("ocr", then="index", registry=reg)
    def ocr(job: Scan, ctx: Context) -> Text:
        return Text(text="")

    @stage("index", registry=reg)
    def index(job: Text, ctx: Context) -> None:
        return None

    reg.check_chains()
    assert reg.names() == ["index", "ocr"]


def test_then_naming_no_registered_stage_is_refused_once_the_apps_are_loaded() -> None:
    from pg_pipeline import Worker

    reg = Registry()

    @stage("ocr", then="indx", registry=reg)
    def ocr(job: Scan, ctx: Context) -> Text:
        return Text(text="")

    with pytest.raises(
        ValueError, match=r"then='indx' names no registered stage \(registered: ocr\)"
    ):
        reg.check_chains()
    # A worker refuses to start with it, before it connects (the address leads nowhere).
    with pytest.raises(ValueError, match="then='indx' names no registered stage"):
        Worker("postgresql://nowhere.invalid/db", registry=reg)
