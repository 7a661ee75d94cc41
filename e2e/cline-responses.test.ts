/** Cline's CLI on OpenAI Responses (items kept by the API) against `selfgc proxy`, in a network namespace. */
import { describeAgentScenarios } from './describe-agent-scenarios.js';

describeAgentScenarios('cline-responses');
