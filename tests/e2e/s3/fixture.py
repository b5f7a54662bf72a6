#!/usr/bin/env python3
"""Uploads test objects to an S3 server with boto3 (which moto brings), for
tests/e2e/s3.sh.

Usage: fixture.py [--iam] ENDPOINT BUCKET [--exists] KEY=FILE... [--multipart KEY=FILE...]
Creates BUCKET (unless --exists), then puts each FILE under KEY (single-part: its ETag is
its MD5); a KEY=FILE after --multipart is uploaded multipart (an ETag
"MD5-N" that is no MD5 of the bytes). Prints each key's ETag.

With --iam (a moto started with INITIAL_NO_AUTH_ACTION_COUNT=6, which
checks every later request's SigV4 signature against its IAM users): first
makes an IAM user allowed everything and an access key for it (4
requests, then the bucket and one object: keep to one KEY=FILE), and
prints "ACCESS_KEY_ID SECRET_ACCESS_KEY" last."""
import json
import sys

import boto3
from boto3.s3.transfer import TransferConfig

args = sys.argv[1:]
iam_mode = args[0] == "--iam"
if iam_mode:
    args = args[1:]
endpoint, bucket, rest = args[0], args[1], args[2:]
anyone = dict(endpoint_url=endpoint, region_name="us-east-1",
              aws_access_key_id="fixture", aws_secret_access_key="fixture")
if iam_mode:
    iam = boto3.client("iam", **anyone)
    iam.create_user(UserName="sexpgpu-test")
    key = iam.create_access_key(UserName="sexpgpu-test")["AccessKey"]
    policy = iam.create_policy(PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17",
         "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    iam.attach_user_policy(UserName="sexpgpu-test", PolicyArn=policy["Policy"]["Arn"])
s3 = boto3.client("s3", **anyone)
if "--exists" in rest:  # the bucket is there: replace objects in it
    rest.remove("--exists")
else:
    s3.create_bucket(Bucket=bucket)
multipart = False
for arg in rest:
    if arg == "--multipart":
        multipart = True
        continue
    name, path = arg.split("=", 1)
    if multipart:
        config = TransferConfig(multipart_threshold=1 << 20, multipart_chunksize=1 << 20)
        s3.upload_file(path, bucket, name, Config=config)
    else:
        with open(path, "rb") as f:
            s3.put_object(Bucket=bucket, Key=name, Body=f.read())
    if not iam_mode:
        print(name, s3.head_object(Bucket=bucket, Key=name)["ETag"])
if iam_mode:
    print(key["AccessKeyId"], key["SecretAccessKey"])
