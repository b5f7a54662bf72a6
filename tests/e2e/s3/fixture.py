#!/usr/bin/env python3
"""Uploads test objects to an S3 server with boto3 (which moto brings), for
tests/e2e/s3.sh.

Usage: fixture.py ENDPOINT BUCKET KEY=FILE... [--multipart KEY=FILE]
Creates BUCKET, then puts each FILE under KEY (single-part: its ETag is
its MD5); a KEY=FILE after --multipart is uploaded in 1 MiB parts (an ETag
"MD5-N" that is no MD5 of the bytes; the server must take parts that small:
moto with S3_UPLOAD_PART_MIN_SIZE=262144). Prints each key's ETag."""
import sys

import boto3
from boto3.s3.transfer import TransferConfig

endpoint, bucket, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="fixture", aws_secret_access_key="fixture")
s3.create_bucket(Bucket=bucket)
multipart = False
for arg in rest:
    if arg == "--multipart":
        multipart = True
        continue
    key, path = arg.split("=", 1)
    if multipart:
        config = TransferConfig(multipart_threshold=1 << 20, multipart_chunksize=1 << 20)
        s3.upload_file(path, bucket, key, Config=config)
    else:
        with open(path, "rb") as f:
            s3.put_object(Bucket=bucket, Key=key, Body=f.read())
    print(key, s3.head_object(Bucket=bucket, Key=key)["ETag"])
