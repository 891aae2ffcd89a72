"""Tender field extraction by a language model behind any OpenAI-compatible endpoint.

Works with OpenAI itself and with local servers that speak ``POST /v1/chat/completions``
(vLLM, Ollama, llama.cpp's server, LM Studio...). The model is asked for JSON following the JSON
schema of :class:`~tender.TenderFields`; the answer is validated with pydantic and, when it
does not validate, the model is shown the error and asked again.

Failure classes, for the job queue:

* :class:`LlmUnavailable` is transient: the endpoint could not be reached, timed out, is
  overloaded (429/5xx) or refused our credentials/model name. The document is not at fault; a
  later attempt may succeed.
* :class:`ExtractionFailed` is permanent for this document: the model kept answering with
  something that is not valid ``TenderFields`` (or the endpoint rejected this request as
  malformed, e.g. too long for the context window).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from pg_pipeline import needs_extra
from pg_pipeline_documents.errors import DocumentError
from pg_pipeline_documents.tender import TenderFields

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.shared_params import ResponseFormatJSONSchema

__all__ = [
    "DEFAULT_MAX_CHARS",
    "ExtractionFailed",
    "LlmExtractor",
    "LlmUnavailable",
]

BASE_URL_ENV = "PIPELINE_LLM_BASE_URL"  #: set: fields come from this OpenAI-compatible endpoint
LLM_FEATURE = f"the LLM extractor ({BASE_URL_ENV} is set)"

DEFAULT_MAX_CHARS = 24_000
_MAX_ECHO = 20_000  # how much of an invalid answer is sent back with the correction request
_NO_KEY = "not-needed"  # local servers ignore the key, but the client insists on sending one

SYSTEM_PROMPT = """\
You extract structured fields from the OCR text of a public-procurement tender notice.
Answer with one JSON object that follows the given JSON schema, and nothing else.
Rules:
- Use only what the text states. When a field is not stated, use null (or [] for lists).
  Never guess.
- title: the title of the whole contract, not of a lot.
- issuing_authority: the name of the contracting authority / buyer, without its address.
- reference: the authority's reference / file number for this tender, exactly as written,
  except that the letter O read instead of the digit 0 inside numbers is corrected.
- submission_deadline: the deadline for receipt of tenders (not for questions, not the opening)
  as ISO 8601, e.g. "2027-03-15T12:00:00+01:00". Include the UTC offset only when the text states
  a time zone (CET=+01:00, CEST=+02:00, GMT/UTC=+00:00, BST=+01:00, EET=+02:00); otherwise
  give local time without offset.
- estimated_value: the total estimated value of the contract (not a lot's value) as a plain
  number without thousand separators, e.g. 1250000.00; "EUR 1.2 million" is 1200000.
- currency: the ISO 4217 code of that value (EUR, GBP, USD...), null when there is no value.
- cpv_codes: every CPV code in the text in the form 12345678-9, in order of appearance, without
  duplicates.
- lots: one entry per lot with its number, title and estimated value (null if not stated).
- contact_email: the contact e-mail address for the tender.
"""


class ExtractionFailed(DocumentError):
    """The model gave no valid answer for this document after every allowed attempt."""


class LlmUnavailable(Exception):
    """Transient: the LLM endpoint could not be used right now; retrying the job later may help."""


def _strip_fences(content: str) -> str:
    """Accept ```json ... ``` wrappers that some local models add despite the schema."""
    m = re.fullmatch(r"\s*```(?:json|JSON)?\s*\n?(.*?)\n?```\s*", content, re.S)
    return m.group(1) if m else content


def _without_credentials(url: str) -> str:
    """`url` without its `user:password@` part and its query (`?api-key=...`): safe to show."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:  # unparsable, e.g. an unclosed `[`: show no more than the scheme
        return url.split("://", 1)[0] + "://..." if "://" in url else "(an unparsable URL)"


def _url_password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _describe(exc: ValidationError) -> str:
    """Compact, model-readable validation errors: ``lots.0.number: Input should be ...``."""
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        problems.append(f"{where}: {err['msg']}")
    return "; ".join(problems)[:2000]


#: Where a request's usage goes: a stage's ctx.usage (tokens_in, tokens_out, llm_calls, model).
UsageReport = Callable[..., None]


class LlmExtractor:
    """Extracts :class:`TenderFields` with a chat-completions model; see the module docstring."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        max_chars: int = DEFAULT_MAX_CHARS,
        temperature: float | None = 0.0,
        http_retries: int = 0,
    ) -> None:
        """``max_retries`` counts extra attempts after an invalid answer; ``http_retries`` are the
        client's own retries of failed requests (0 by default: the job queue retries
        :class:`LlmUnavailable` with its own backoff). ``temperature=None`` leaves it to the
        server (some hosted reasoning models reject any explicit value)."""
        if not base_url:
            raise ValueError("base_url is required")
        if not model:
            raise ValueError("model is required")
        if max_retries < 0 or http_retries < 0:
            raise ValueError("retries cannot be negative")
        if max_chars < 1:
            raise ValueError("max_chars must be positive")
        self.base_url = base_url
        #: what error messages name: a base URL may carry `user:password@` or `?api-key=`
        self.shown_url = _without_credentials(base_url)
        self._secrets = sorted(
            {s for s in (api_key, _url_password(base_url)) if s and len(s) >= 3},
            key=len,
            reverse=True,
        )
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.max_chars = max_chars
        self.temperature = temperature
        # Imported only when an endpoint is configured: the client library takes longer to
        # import than the rest of the pipeline, and every `pipeline` command would pay for it.
        with needs_extra("llm", LLM_FEATURE):
            import openai

        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or _NO_KEY,
            timeout=timeout_s,
            max_retries=http_retries,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LlmExtractor | None:
        """Configured from ``PIPELINE_LLM_*`` variables; None when no base URL is set.

        ``PIPELINE_LLM_BASE_URL`` (e.g. http://localhost:11434/v1), ``PIPELINE_LLM_MODEL``
        (required with a base URL), ``PIPELINE_LLM_API_KEY`` (optional for local servers), and
        optionally ``PIPELINE_LLM_TIMEOUT_S`` (120), ``PIPELINE_LLM_MAX_RETRIES`` (2),
        ``PIPELINE_LLM_MAX_CHARS`` (24000) and ``PIPELINE_LLM_TEMPERATURE`` (0; ``none`` to send
        none).
        """
        env = os.environ if environ is None else environ
        base_url = env.get(BASE_URL_ENV, "").strip()
        if not base_url:
            return None
        model = env.get("PIPELINE_LLM_MODEL", "").strip()
        if not model:
            raise ValueError("PIPELINE_LLM_BASE_URL is set but PIPELINE_LLM_MODEL is not")

        def number(name: str, default: float) -> float:
            raw = env.get(name, "").strip()
            if not raw:
                return default
            try:
                return float(raw)
            except ValueError:
                raise ValueError(f"{name} must be a number, got {raw!r}") from None

        raw_temperature = env.get("PIPELINE_LLM_TEMPERATURE", "").strip().lower()
        temperature = (
            None
            if raw_temperature in ("none", "default")
            else number("PIPELINE_LLM_TEMPERATURE", 0.0)
        )
        return cls(
            base_url=base_url,
            model=model,
            api_key=env.get("PIPELINE_LLM_API_KEY", "").strip() or None,
            timeout_s=number("PIPELINE_LLM_TIMEOUT_S", 120.0),
            max_retries=int(number("PIPELINE_LLM_MAX_RETRIES", 2)),
            max_chars=int(number("PIPELINE_LLM_MAX_CHARS", DEFAULT_MAX_CHARS)),
            temperature=temperature,
        )

    def __repr__(self) -> str:  # never shows the API key, or credentials in the URL
        return f"LlmExtractor(base_url={self.shown_url!r}, model={self.model!r})"

    def _safe(self, text: str) -> str:
        """`text` from the client or the server without the URL's credentials or the key."""
        text = text.replace(self.base_url, self.shown_url)
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> LlmExtractor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------

    def _user_text(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        return text[: self.max_chars] + "\n[... text truncated ...]"

    def response_format(self) -> ResponseFormatJSONSchema:
        return {
            "type": "json_schema",
            "json_schema": {
                "name": "tender_fields",
                "schema": TenderFields.model_json_schema(),
                "strict": False,
            },
        }

    def _ask(
        self, messages: list[ChatCompletionMessageParam], usage: UsageReport | None = None
    ) -> tuple[str | None, str]:
        """One request; returns (content, finish_reason). Endpoint failures are translated.
        `usage` (a stage's ctx.usage) is told the request's tokens from the API's usage field."""
        import openai

        try:
            completion = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                response_format=self.response_format(),
                temperature=openai.omit if self.temperature is None else self.temperature,
            )
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            kind = "timed out" if isinstance(exc, openai.APITimeoutError) else "unreachable"
            raise LlmUnavailable(
                f"LLM endpoint {self.shown_url} {kind}: {self._safe(str(exc))}"
            ) from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            detail = (
                f"LLM endpoint {self.shown_url} answered HTTP {status}: {self._safe(exc.message)}"
            )
            if status in (400, 413, 422):
                # The endpoint rejects this request itself (too long, unsupported input):
                # sending the same document again cannot help.
                raise ExtractionFailed(detail) from exc
            raise LlmUnavailable(detail) from exc
        except openai.APIResponseValidationError as exc:
            raise LlmUnavailable(f"LLM endpoint {self.shown_url} sent a malformed reply") from exc
        if usage is not None:
            used = completion.usage
            tokens = {} if used is None else {"tokens_in": used.prompt_tokens or 0}
            if used is not None:
                tokens["tokens_out"] = used.completion_tokens or 0
            usage(llm_calls=1, model=completion.model or self.model, **tokens)
        if not completion.choices:
            return None, "no choices"
        choice = completion.choices[0]
        return choice.message.content, str(choice.finish_reason)

    def extract(self, text: str, usage: UsageReport | None = None) -> TenderFields:
        """Ask the model; retry invalid answers with the error shown; raise on failure.
        `usage` (a stage's ctx.usage) is told each request's tokens."""
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": self._user_text(text)},
        ]
        errors: list[str] = []
        for _ in range(self.max_retries + 1):
            content, finish_reason = self._ask(messages, usage)
            if content is None or not content.strip():
                error = f"the answer had no content (finish_reason={finish_reason})"
                content = "(empty answer)"
            else:
                try:
                    return TenderFields.model_validate_json(_strip_fences(content))
                except ValidationError as exc:
                    error = _describe(exc)
                    if finish_reason == "length":
                        error = f"the answer was cut off (finish_reason=length): {error}"
            errors.append(error)
            messages.append({"role": "assistant", "content": content[:_MAX_ECHO]})
            messages.append(
                {
                    "role": "user",
                    "content": (
                        "That answer is not valid for the schema: "
                        f"{error}\nReply again with only the corrected JSON object."
                    ),
                }
            )
        raise ExtractionFailed(
            f"the model gave no valid TenderFields in {len(errors)} attempt(s); "
            f"last error: {errors[-1]}"
        )

    __call__ = extract
