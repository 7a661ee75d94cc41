#!/usr/bin/env node
import { runMain } from '../dist/cli/run-main.js';

await runMain();
