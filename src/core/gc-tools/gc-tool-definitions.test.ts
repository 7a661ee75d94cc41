import { describe, expect, it } from 'vitest';
import {
  FoldArguments,
  GC_TOOL_ARGUMENTS,
  gcToolSpecs,
  gcToolsForAiSdk,
  gcToolsForAnthropic,
  gcToolsForOpenAIChat,
  gcToolsForOpenAIResponses,
} from './gc-tool-definitions.js';

describe('GC tool definitions', () => {
  it('define fold, prune, expand and search_context with JSON schemas of their arguments', () => {
    expect(gcToolSpecs.map((spec) => spec.name)).toEqual(['fold', 'prune', 'expand', 'search_context']);
    const fold = gcToolSpecs[0]!;
    expect(fold.parameters).toEqual({
      type: 'object',
      properties: {
        id: { type: 'string', minLength: 1, description: expect.stringContaining('function:bash:7') },
        summary: { type: 'string', maxLength: 600, description: expect.any(String) },
        reason: { type: 'string', maxLength: 300, description: expect.any(String) },
      },
      required: ['id'],
    });
    expect(gcToolSpecs[3]!.parameters).toMatchObject({
      required: ['query'],
      properties: { limit: { type: 'integer' } },
    });
    for (const spec of gcToolSpecs) {
      expect(spec.description.length).toBeGreaterThan(30);
      expect(spec.parameters).not.toHaveProperty('$schema');
    }
  });

  it('render each provider shape from the same specs', () => {
    const [fold] = gcToolSpecs;
    expect(gcToolsForOpenAIChat()[0]).toEqual({
      type: 'function',
      function: { name: 'fold', description: fold!.description, parameters: fold!.parameters },
    });
    // Responses function tools are flat, and strict mode would demand every property be required.
    expect(gcToolsForOpenAIResponses()[0]).toEqual({
      type: 'function',
      name: 'fold',
      description: fold!.description,
      parameters: fold!.parameters,
      strict: false,
    });
    expect(gcToolsForAnthropic()[0]).toEqual({
      name: 'fold',
      description: fold!.description,
      input_schema: fold!.parameters,
    });
    expect(gcToolsForAiSdk()[0]).toEqual({
      type: 'function',
      name: 'fold',
      description: fold!.description,
      inputSchema: fold!.parameters,
    });
    for (const tools of [
      gcToolsForOpenAIChat(),
      gcToolsForOpenAIResponses(),
      gcToolsForAnthropic(),
      gcToolsForAiSdk(),
    ]) {
      expect(tools).toHaveLength(4);
    }
  });

  it('validate what the schemas describe', () => {
    expect(FoldArguments.safeParse({ id: 'function:bash:7', summary: 'ok' }).success).toBe(true);
    expect(FoldArguments.safeParse({ id: '' }).success).toBe(false);
    expect(GC_TOOL_ARGUMENTS.search_context.safeParse({ query: 'pytest', limit: 21 }).success).toBe(false);
    expect(GC_TOOL_ARGUMENTS.expand.safeParse({ id: 'function:read_file:3' }).data).toEqual({
      id: 'function:read_file:3',
    });
  });
});
