// Qwen3's markup, spelled once: the think block and the tool-call and tool-response tags its chat template writes,
// which the prompt renders, the grammars force, the answer pipeline reads back and the sampler bans inside arguments.
export const THINK_OPEN = "<think>";
export const THINK_CLOSE = "</think>";
export const TOOL_CALL_OPEN = "<tool_call>";
export const TOOL_CALL_CLOSE = "</tool_call>";
export const TOOL_RESPONSE_OPEN = "<tool_response>";
export const TOOL_RESPONSE_CLOSE = "</tool_response>";
export const TURN_START = "<|im_start|>";

/** Every tag above, which never belongs inside a tool call's JSON arguments. */
export const QWEN3_MARKUP = [THINK_OPEN, THINK_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_CLOSE, TOOL_RESPONSE_OPEN, TOOL_RESPONSE_CLOSE, TURN_START] as const;
